#![doc = include_str!("../docs/programs.md")]

#[cfg(test)]
mod tests {
    use crate::TABLE;

    /// The names in the first column of the table under `heading`.
    fn listed(heading: &str) -> Vec<String> {
        let doc = include_str!("../docs/programs.md");
        let section = doc.split(heading).nth(1).unwrap_or_default();
        let section = section.split("\n## ").next().unwrap_or_default();
        section
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split('`').next())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_table_lists_every_program_and_builtin() {
        let mut programs: Vec<String> = TABLE.iter().map(|p| p.name().to_string()).collect();
        let mut documented = listed("## Programs");
        programs.sort();
        documented.sort();
        assert_eq!(documented, programs);
        let mut builtins = fakekube_runtime::shell::builtin_names();
        let mut documented = listed("## Builtins");
        builtins.sort();
        documented.sort();
        assert_eq!(documented, builtins);
    }
}
