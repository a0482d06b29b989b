//! A pod's network: the TCP ports its processes listen on, reached from inside the pod (`nc
//! 127.0.0.1 8080`) and by the kubelet's port-forwarding, entirely in memory. There is no
//! address and no routing: one pod is one loopback, and nothing here ever opens a host socket.
//!
//! A [`PodNetwork`] is the pod's table of listening ports, shared by every container and exec of
//! the pod (clones share it). [`PodNetwork::listen`] takes a port, as `bind` + `listen` do
//! (`EADDRINUSE` for a taken one); [`PodNetwork::connect`] reaches a listener with a new
//! [`Connection`], queued until the listener accepts it (`ECONNREFUSED` when nobody listens).
//! A [`Listener`] gives its port back when it is dropped, which happens when the program holding
//! it ends or is killed, as the kernel closes a dead process's sockets.
//!
//! A [`Connection`] is one end of a duplex byte stream ([`AsyncRead`] + [`AsyncWrite`]), with
//! TCP's half-close: `shutdown` ends what the peer reads and leaves the other direction open.
//! Dropping an end is closing the socket: the peer reads end of file and its writes fail.
//!
//! Beyond the pod lies the cluster, which this crate does not know: whoever runs the pod (the
//! kubelet) gives its network a [`Cluster`] with [`PodNetwork::set_cluster`], and
//! [`PodNetwork::lookup`] and [`PodNetwork::connect_to`] ask it for every name and address that
//! is not the pod's own. Without one, other hosts are unreachable. Either way nothing leaves
//! the process: a cluster connects to another pod's listener as this module does.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::sync::mpsc;

/// The ports `listen(0)` picks from (Linux's default `ip_local_port_range`).
pub const EPHEMERAL_PORTS: std::ops::RangeInclusive<u16> = 32768..=60999;

/// Connections a listener queues before it accepts them (`somaxconn`'s order of magnitude).
const BACKLOG: usize = 128;

/// Bytes buffered in each direction of a connection (about a socket buffer).
const BUFFER: usize = 64 * 1024;

/// Why a network call failed, worded as `strerror` words the errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// ECONNREFUSED: nothing listens on the port, or its backlog is full.
    #[error("Connection refused")]
    ConnectionRefused,
    /// EADDRINUSE: the port is taken (or, for port 0, no ephemeral port is free).
    #[error("Address already in use")]
    AddressInUse,
    /// ENETUNREACH: the address is not the pod's own and no cluster lies beyond it.
    #[error("Network is unreachable")]
    NetworkUnreachable,
    /// EHOSTUNREACH: no pod or Service of the cluster has the address.
    #[error("No route to host")]
    HostUnreachable,
}

/// The cluster around a pod, as its programs reach it: names resolved as the cluster's DNS
/// resolves them for this pod (its namespace searched first) and connections to other pods'
/// listeners, through Services or by pod address. Implemented by the kubelet, which knows the
/// cluster; this crate knows none.
pub trait Cluster: Send + Sync + fmt::Debug {
    /// The addresses `name` resolves to, best first; empty when the name is unknown (the
    /// pod's own names are resolved before the cluster is asked).
    fn lookup(&self, name: &str) -> Vec<IpAddr>;

    /// A connection to `ip:port` somewhere in the cluster: a Service's ClusterIP reaches one of
    /// its ready endpoints, a pod's address that pod.
    fn connect(&self, ip: IpAddr, port: u16) -> Result<Connection, NetError>;
}

/// One listening port in the table.
#[derive(Debug)]
struct Entry {
    /// Which [`Listener`] owns it (a later listener on the same port has another id).
    id: u64,
    /// Where new connections wait to be accepted.
    backlog: mpsc::Sender<Connection>,
}

/// The ports of one pod.
#[derive(Default)]
struct Table {
    /// Listening ports.
    listeners: HashMap<u16, Entry>,
    /// The next listener id.
    next_id: u64,
    /// Where the search for a free ephemeral port starts.
    next_ephemeral: u16,
    /// The ephemeral port the next outgoing connection reports as its own.
    next_source: u16,
    /// The cluster beyond the pod, once its runner gave one.
    cluster: Option<Arc<dyn Cluster>>,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("listeners", &self.listeners.keys().collect::<Vec<_>>())
            .field("cluster", &self.cluster.is_some())
            .finish_non_exhaustive()
    }
}

/// A pod's network namespace: its listening ports. Cheap to clone; clones share the ports.
#[derive(Debug, Clone, Default)]
pub struct PodNetwork(Arc<Mutex<Table>>);

impl PodNetwork {
    /// A network with no port open.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Listens on `port` (0: a free port from [`EPHEMERAL_PORTS`]); the port is taken until the
    /// returned [`Listener`] is dropped.
    pub fn listen(&self, port: u16) -> Result<Listener, NetError> {
        let mut table = self.lock();
        let port = if port == 0 {
            free_ephemeral(&mut table).ok_or(NetError::AddressInUse)?
        } else if table.listeners.contains_key(&port) {
            return Err(NetError::AddressInUse);
        } else {
            port
        };
        let (tx, rx) = mpsc::channel(BACKLOG);
        let id = table.next_id;
        table.next_id += 1;
        table.listeners.insert(port, Entry { id, backlog: tx });
        Ok(Listener {
            port,
            id,
            backlog: tokio::sync::Mutex::new(rx),
            network: self.clone(),
        })
    }

    /// Connects to the listener on `port`: the connection is established at once (the kernel
    /// accepts it into the backlog) and waits there until the listener accepts it.
    pub fn connect(&self, port: u16) -> Result<Connection, NetError> {
        let mut table = self.lock();
        let Some(entry) = table.listeners.get(&port) else {
            return Err(NetError::ConnectionRefused);
        };
        let backlog = entry.backlog.clone();
        let source = next_source(&mut table);
        drop(table);
        let (near, far) = tokio::io::duplex(BUFFER);
        let theirs = Connection {
            io: far,
            local_port: port,
            peer_port: source,
        };
        backlog
            .try_send(theirs)
            .map_err(|_| NetError::ConnectionRefused)?;
        Ok(Connection {
            io: near,
            local_port: source,
            peer_port: port,
        })
    }

    /// Puts the pod in `cluster`: names and addresses other than the pod's own are resolved
    /// and reached through it from now on (every clone of this network).
    pub fn set_cluster(&self, cluster: Arc<dyn Cluster>) {
        self.lock().cluster = Some(cluster);
    }

    /// The cluster the pod is in, if any.
    fn cluster(&self) -> Option<Arc<dyn Cluster>> {
        self.lock().cluster.clone()
    }

    /// The addresses a name that is not the pod's own resolves to in its cluster (empty
    /// without a cluster or for an unknown name).
    pub fn lookup(&self, name: &str) -> Vec<IpAddr> {
        self.cluster().map(|c| c.lookup(name)).unwrap_or_default()
    }

    /// Connects to `ip:port`: the pod itself for a loopback or unspecified address, else the
    /// cluster ([`NetError::NetworkUnreachable`] without one).
    pub fn connect_to(&self, ip: IpAddr, port: u16) -> Result<Connection, NetError> {
        if ip.is_loopback() || ip.is_unspecified() {
            return self.connect(port);
        }
        match self.cluster() {
            Some(cluster) => cluster.connect(ip, port),
            None => Err(NetError::NetworkUnreachable),
        }
    }

    /// The ports listened on now, in order (what `netstat -ltn` would list).
    pub fn listening(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self.lock().listeners.keys().copied().collect();
        ports.sort_unstable();
        ports
    }
}

/// A free port of [`EPHEMERAL_PORTS`], searched round-robin.
fn free_ephemeral(table: &mut Table) -> Option<u16> {
    let (low, high) = (*EPHEMERAL_PORTS.start(), *EPHEMERAL_PORTS.end());
    let span = u32::from(high - low) + 1;
    let start = table.next_ephemeral.clamp(low, high);
    (0..span)
        .filter_map(|i| {
            let offset = (u32::from(start - low) + i) % span;
            u16::try_from(u32::from(low) + offset).ok()
        })
        .find(|p| !table.listeners.contains_key(p))
        .inspect(|p| table.next_ephemeral = p.wrapping_add(1))
}

/// The source port of the next outgoing connection (any ephemeral port: nothing binds it).
fn next_source(table: &mut Table) -> u16 {
    let (low, high) = (*EPHEMERAL_PORTS.start(), *EPHEMERAL_PORTS.end());
    let port = table.next_source.clamp(low, high);
    table.next_source = if port == high { low } else { port + 1 };
    port
}

/// A listening port; dropping it closes the port and every connection not yet accepted.
#[derive(Debug)]
pub struct Listener {
    /// The port.
    port: u16,
    /// Its id in the table.
    id: u64,
    /// Connections waiting to be accepted.
    backlog: tokio::sync::Mutex<mpsc::Receiver<Connection>>,
    /// The network it belongs to.
    network: PodNetwork,
}

impl Listener {
    /// The port listened on (the one chosen, for `listen(0)`).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The next connection, waiting for one; `None` only once the listener is closed.
    pub async fn accept(&self) -> Option<Connection> {
        self.backlog.lock().await.recv().await
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut table = self.network.lock();
        if table
            .listeners
            .get(&self.port)
            .is_some_and(|e| e.id == self.id)
        {
            table.listeners.remove(&self.port);
        }
    }
}

/// One end of a connection: a byte stream both ways, with half-close.
#[derive(Debug)]
pub struct Connection {
    /// The stream.
    io: DuplexStream,
    /// This end's port.
    local_port: u16,
    /// The other end's port.
    peer_port: u16,
}

impl Connection {
    /// This end's port: the listening port for an accepted connection, an ephemeral one for a
    /// connecting end.
    pub fn local_port(&self) -> u16 {
        self.local_port
    }

    /// The other end's port.
    pub fn peer_port(&self) -> u16 {
        self.peer_port
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_connection_reaches_the_listener_both_ways_with_half_close() {
        let net = PodNetwork::new();
        let listener = net.listen(8080).expect("the port is free");
        let mut client = net.connect(8080).expect("someone listens");
        let mut server = listener.accept().await.expect("a connection");
        assert_eq!(server.local_port(), 8080);
        assert_eq!(client.peer_port(), 8080);
        assert_eq!(server.peer_port(), client.local_port());
        client.write_all(b"ping").await.expect("written");
        client.shutdown().await.expect("half-closed");
        let mut got = Vec::new();
        server.read_to_end(&mut got).await.expect("read to EOF");
        assert_eq!(got, b"ping");
        server
            .write_all(b"pong")
            .await
            .expect("the other way is open");
        drop(server);
        let mut back = Vec::new();
        client.read_to_end(&mut back).await.expect("read to EOF");
        assert_eq!(back, b"pong");
    }

    #[test]
    fn a_closed_port_refuses_and_a_taken_one_is_in_use() {
        let net = PodNetwork::new();
        assert_eq!(
            net.connect(80).map(|_| ()),
            Err(NetError::ConnectionRefused)
        );
        let listener = net.listen(80).expect("the port is free");
        assert_eq!(net.listen(80).map(|_| ()), Err(NetError::AddressInUse));
        assert_eq!(net.listening(), vec![80]);
        drop(listener);
        assert_eq!(
            net.connect(80).map(|_| ()),
            Err(NetError::ConnectionRefused)
        );
        assert!(net.listen(80).is_ok());
    }

    #[test]
    fn port_zero_picks_a_free_ephemeral_port() {
        let net = PodNetwork::new();
        let a = net.listen(0).expect("a port");
        let b = net.listen(0).expect("another port");
        assert!(EPHEMERAL_PORTS.contains(&a.port()));
        assert!(EPHEMERAL_PORTS.contains(&b.port()));
        assert_ne!(a.port(), b.port());
    }

    #[tokio::test]
    async fn clones_share_the_ports_and_other_pods_do_not() {
        let net = PodNetwork::new();
        let _listener = net.clone().listen(9000).expect("the port is free");
        assert!(net.connect(9000).is_ok());
        assert_eq!(
            PodNetwork::new().connect(9000).map(|_| ()),
            Err(NetError::ConnectionRefused)
        );
    }

    #[tokio::test]
    async fn connections_not_accepted_end_when_the_listener_closes() {
        let net = PodNetwork::new();
        let listener = net.listen(7).expect("the port is free");
        let mut client = net.connect(7).expect("someone listens");
        drop(listener);
        let mut got = Vec::new();
        assert_eq!(client.read_to_end(&mut got).await.ok(), Some(0));
        assert!(client.write_all(b"x").await.is_err());
    }
}
