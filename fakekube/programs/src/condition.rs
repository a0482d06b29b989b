//! `test` and `[`: file tests, string and integer comparisons, `!`, `-a`, `-o` and parentheses.

use fakekube_runtime::fs::NodeKind;
use fakekube_runtime::process::Process;

/// Evaluates a `test` expression; `Err` is a usage message (exit 2).
fn eval_test(proc: &Process, args: &[String]) -> Result<bool, String> {
    let mut p = TestParser {
        proc,
        args,
        pos: 0,
        depth: 0,
    };
    let v = match args.len() {
        0 => false,
        1 => !args[0].is_empty(),
        2 if args[0] == "!" => args[1].is_empty(),
        2 => p.unary(&args[0], &args[1])?,
        3 if is_binary(&args[1]) => p.binary(&args[0], &args[1], &args[2])?,
        3 if args[0] == "!" => !eval_test(proc, &args[1..])?,
        3 if args[0] == "(" && args[2] == ")" => !args[1].is_empty(),
        4 if args[0] == "!" => !eval_test(proc, &args[1..])?,
        4 if args[0] == "(" && args[3] == ")" => eval_test(proc, &args[1..3])?,
        _ => {
            let v = p.or()?;
            if p.pos < args.len() {
                return Err(format!("{}: unexpected operator", args[p.pos]));
            }
            v
        }
    };
    Ok(v)
}

/// Whether `op` is a binary `test` operator.
fn is_binary(op: &str) -> bool {
    matches!(
        op,
        "=" | "=="
            | "!="
            | "<"
            | ">"
            | "-eq"
            | "-ne"
            | "-lt"
            | "-le"
            | "-gt"
            | "-ge"
            | "-nt"
            | "-ot"
            | "-ef"
            | "-a"
            | "-o"
    )
}

/// Whether `op` is a unary `test` operator.
fn is_unary(op: &str) -> bool {
    op.len() == 2 && op.starts_with('-') && "efdsrwxnzLhpSbcgukOGt".contains(&op[1..])
}

/// Recursive-descent `test` parser for the general case.
struct TestParser<'a> {
    /// The process (for file tests).
    proc: &'a Process,
    /// Arguments.
    args: &'a [String],
    /// Cursor.
    pos: usize,
    /// Nesting (parentheses and `!`).
    depth: usize,
}

impl TestParser<'_> {
    /// `expr -o expr`.
    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.args.get(self.pos).map(String::as_str) == Some("-o") {
            self.pos += 1;
            let r = self.and()?;
            v = v || r;
        }
        Ok(v)
    }

    /// `expr -a expr`.
    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.not()?;
        while self.args.get(self.pos).map(String::as_str) == Some("-a") {
            self.pos += 1;
            let r = self.not()?;
            v = v && r;
        }
        Ok(v)
    }

    /// `! expr`, `( expr )`, primaries.
    fn not(&mut self) -> Result<bool, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("expression too deep".into());
        }
        let a = self
            .args
            .get(self.pos)
            .cloned()
            .ok_or_else(|| "argument expected".to_string())?;
        let r = if a == "!" {
            self.pos += 1;
            self.not().map(|v| !v)
        } else if a == "("
            && (self.args.get(self.pos + 2).map(String::as_str) != Some(")")
                || self.args.len() > self.pos + 3)
        {
            self.pos += 1;
            let v = self.or()?;
            if self.args.get(self.pos).map(String::as_str) != Some(")") {
                return Err("')' expected".into());
            }
            self.pos += 1;
            Ok(v)
        } else if let Some(op) = self
            .args
            .get(self.pos + 1)
            .filter(|op| is_binary(op) && *op != "-a" && *op != "-o")
        {
            let op = op.clone();
            let rhs = self
                .args
                .get(self.pos + 2)
                .cloned()
                .ok_or_else(|| format!("{op}: argument expected"))?;
            self.pos += 3;
            self.binary(&a, &op, &rhs)
        } else if is_unary(&a) && self.args.get(self.pos + 1).is_some() {
            let operand = self.args[self.pos + 1].clone();
            self.pos += 2;
            self.unary(&a, &operand)
        } else {
            self.pos += 1;
            Ok(!a.is_empty())
        };
        self.depth -= 1;
        r
    }

    /// A unary primary.
    fn unary(&self, op: &str, operand: &str) -> Result<bool, String> {
        let meta = || self.proc.fs.metadata(&self.proc.path(operand)).ok();
        Ok(match op {
            "-n" => !operand.is_empty(),
            "-z" => operand.is_empty(),
            "-e" | "-r" | "-w" => meta().is_some(),
            "-f" => meta().is_some_and(|m| m.kind == NodeKind::Regular),
            "-d" => meta().is_some_and(|m| m.kind == NodeKind::Directory),
            "-c" => meta().is_some_and(|m| m.kind == NodeKind::CharDevice),
            "-s" => meta().is_some_and(|m| {
                m.size > 0 && m.kind != NodeKind::Directory || m.kind == NodeKind::Directory
            }),
            "-x" => meta().is_some_and(|m| m.kind == NodeKind::Directory || m.is_executable()),
            "-u" => meta().is_some_and(|m| m.mode & 0o4000 != 0),
            "-g" => meta().is_some_and(|m| m.mode & 0o2000 != 0),
            "-k" => meta().is_some_and(|m| m.mode & 0o1000 != 0),
            "-O" | "-G" => meta().is_some(),
            "-L" | "-h" => self
                .proc
                .fs
                .symlink_metadata(&self.proc.path(operand))
                .is_ok_and(|m| m.kind == NodeKind::Symlink),
            "-p" | "-S" | "-b" | "-t" => false,
            _ => return Err(format!("{op}: unary operator expected")),
        })
    }

    /// A binary primary.
    fn binary(&self, a: &str, op: &str, b: &str) -> Result<bool, String> {
        let int = |s: &str| -> Result<i64, String> {
            let t = s.trim();
            let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(format!("Illegal number: {s}"));
            }
            t.parse::<i64>().map_err(|_| format!("Illegal number: {s}"))
        };
        let mtime = |p: &str| {
            self.proc
                .fs
                .metadata(&self.proc.path(p))
                .ok()
                .map(|m| m.mtime)
        };
        Ok(match op {
            "=" | "==" => a == b,
            "!=" => a != b,
            "<" => a < b,
            ">" => a > b,
            "-eq" => int(a)? == int(b)?,
            "-ne" => int(a)? != int(b)?,
            "-lt" => int(a)? < int(b)?,
            "-le" => int(a)? <= int(b)?,
            "-gt" => int(a)? > int(b)?,
            "-ge" => int(a)? >= int(b)?,
            "-nt" => {
                matches!((mtime(a), mtime(b)), (Some(x), Some(y)) if x > y)
                    || (mtime(a).is_some() && mtime(b).is_none())
            }
            "-ot" => {
                matches!((mtime(a), mtime(b)), (Some(x), Some(y)) if x < y)
                    || (mtime(a).is_none() && mtime(b).is_some())
            }
            "-ef" => {
                let norm = |p: &str| fakekube_runtime::fs::normalize(&self.proc.path(p)).ok();
                mtime(a).is_some() && norm(a) == norm(b)
            }
            "-a" => !a.is_empty() && !b.is_empty(),
            "-o" => !a.is_empty() || !b.is_empty(),
            _ => return Err(format!("{op}: binary operator expected")),
        })
    }
}

/// `test expr` and `[ expr ]`: 0 true, 1 false, 2 usage error.
pub(crate) async fn test(proc: Process) -> i32 {
    let mut args = proc.args().to_vec();
    if proc.name() == "[" {
        if args.last().map(String::as_str) != Some("]") {
            proc.err("missing ]").await;
            return 2;
        }
        args.pop();
    }
    match eval_test(&proc, &args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            proc.err(&e).await;
            2
        }
    }
}
