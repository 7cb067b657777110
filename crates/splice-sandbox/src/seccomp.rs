//! The seccomp filter that keeps confined commands and package tools away from Unix sockets.
//!
//! Landlock does not govern connecting to a socket in the file system, so without this a
//! confined command could reach `/var/run/docker.sock`, an ssh-agent, tmux or D-Bus: code
//! running outside the sandbox. A seccomp filter cannot see the path a socket connects to, so
//! it refuses creating Unix sockets at all (`socket(AF_UNIX, …)` fails with EACCES, which tools
//! report as "permission denied"); abstract sockets are Unix sockets too. Other families reach
//! programs outside as well (`AF_VSOCK` the virtual machine's host, where Firecracker maps it to
//! a Unix socket, whatever the network namespace; netlink's `NETLINK_USERSOCK` any process that
//! bound a port), so `socket` is allowed for the network (`AF_INET`, `AF_INET6`) and netlink's
//! kernel protocols (`getifaddrs`, `ip`) only, anything else refused. Connected pairs
//! (`socketpair` of stream or seqpacket type, which libuv, Python and shells use internally)
//! stay allowed: they cannot be pointed elsewhere. A datagram pair can (`sendto` a path), so
//! that type is refused. The ways around the `socket` check are closed as well: io_uring (which
//! creates and connects sockets without the syscall), another architecture's syscalls (i386
//! through `int 0x80`), x32 numbers, and `pidfd_getfd` (taking a connected socket from another
//! process). The kernel's keyrings are refused as well (`add_key`, `request_key`, `keyctl`): the
//! session keyring Splice inherited, and the user keyring every process of yours shares, hold
//! Kerberos tickets and other logins.
//!
//! `sandbox.allowAllUnixSockets` lifts the Unix-socket part only: the other families, io_uring
//! (which could create them) and `pidfd_getfd` stay refused.
//!
//! The filter is installed by the single-threaded launcher stages right before they start
//! the command or Node; the kernel keeps it across `exec` and for every descendant.

use seccompiler::sock_filter;

/// Test hook: set (non-empty) to make installing the filter fail, as on a kernel without
/// seccomp. It can only make Splice stricter: nothing runs without the filter.
pub const NO_SECCOMP_ENV: &str = "SPLICE_TEST_NO_SECCOMP";
/// The package launcher's form of the hook (its environment is cleared).
pub const NO_SECCOMP_ARG: &str = "--no-seccomp";

/// What the filter refuses with: "permission denied".
const REFUSED: u32 = libc::SECCOMP_RET_ERRNO | (libc::EACCES as u32 & libc::SECCOMP_RET_DATA);
const ALLOWED: u32 = libc::SECCOMP_RET_ALLOW;

/// `AUDIT_ARCH_*` of the architecture Splice was built for: syscalls of any other (a 64-bit
/// x86 process can make i386 ones) are refused.
#[cfg(target_arch = "x86_64")]
const ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(target_arch = "aarch64")]
const ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCH: Option<u32> = None;

/// x32 syscalls are the x86-64 numbers with this bit set; no native number has it.
const X32_BIT: u32 = 0x4000_0000;

/// Offsets in `struct seccomp_data`: `nr`, `arch`, then the arguments from 16, 8 bytes each
/// (the low half first on the little-endian architectures above).
const NR: u32 = 0;
const ARCH_OFFSET: u32 = 4;
const ARG0: u32 = 16;
const ARG1: u32 = 24;
const ARG2: u32 = 32;

/// Netlink's protocol for messages between processes (`linux/netlink.h`): a port any process
/// may send to, unlike the kernel's protocols.
const NETLINK_USERSOCK: u32 = 2;

/// The socket type in `socket`/`socketpair`'s type argument (the rest is flags).
const SOCK_TYPE_MASK: u32 = 0xf;

// Classic BPF opcodes (linux/filter.h).
/// `BPF_LD | BPF_W | BPF_ABS`: load a word of `seccomp_data`.
const LD_W_ABS: u16 = 0x20;
/// `BPF_ALU | BPF_AND | BPF_K`.
const ALU_AND_K: u16 = 0x54;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const JMP_JEQ_K: u16 = 0x15;
/// `BPF_JMP | BPF_JSET | BPF_K`.
const JMP_JSET_K: u16 = 0x45;
/// `BPF_RET | BPF_K`.
const RET_K: u16 = 0x06;

/// The syscalls refused outright: io_uring (sockets without `socket`), taking a file
/// descriptor (a connected socket) from another process, and the kernel's keyrings (`add_key`,
/// `request_key`, `keyctl`: a confined command would read and replace the keys of every
/// keyring it can name, the session keyring Splice inherited and the user keyring, none of
/// them its own).
fn refused_syscalls() -> [u32; 7] {
    [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_pidfd_getfd,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_keyctl,
    ]
    .map(word)
}

/// A syscall number or flag as the 32-bit word the filter compares (they are all small and
/// non-negative).
fn word(value: impl Into<i64>) -> u32 {
    u32::try_from(value.into()).unwrap_or(u32::MAX)
}

/// Where a jump goes: the next instruction or a named place.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Label {
    Next,
    Socket,
    Netlink,
    Pair,
    Allow,
    Refuse,
}

enum Op {
    Load(u32),
    And(u32),
    Jeq(u32, Label, Label),
    Jset(u32, Label, Label),
    Return(u32),
    /// Marks where a label points; emits nothing.
    Here(Label),
}

use Label::{Allow, Netlink, Next, Pair, Refuse, Socket};

/// The filter program, or why there is none for this architecture. `allow_unix`: the person
/// lifted the block on Unix sockets (`socket(AF_UNIX)` and every kind of pair are allowed).
pub fn program(allow_unix: bool) -> Result<Vec<sock_filter>, SeccompError> {
    let (unix, datagram_pair) = if allow_unix {
        (Allow, Allow)
    } else {
        (Refuse, Refuse)
    };
    let arch = ARCH.ok_or(SeccompError::Architecture(std::env::consts::ARCH))?;
    let mut ops = vec![
        Op::Load(ARCH_OFFSET),
        Op::Jeq(arch, Next, Refuse),
        Op::Load(NR),
        Op::Jset(X32_BIT, Refuse, Next),
        Op::Jeq(word(libc::SYS_socket), Socket, Next),
        Op::Jeq(word(libc::SYS_socketpair), Pair, Next),
    ];
    ops.extend(
        refused_syscalls()
            .into_iter()
            .map(|nr| Op::Jeq(nr, Refuse, Next)),
    );
    ops.extend([
        Op::Return(ALLOWED),
        // The kernel reads the family and protocol as ints: the low half is all it sees.
        Op::Here(Socket),
        Op::Load(ARG0),
        Op::Jeq(word(libc::AF_INET), Allow, Next),
        Op::Jeq(word(libc::AF_INET6), Allow, Next),
        Op::Jeq(word(libc::AF_UNIX), unix, Next),
        Op::Jeq(word(libc::AF_NETLINK), Netlink, Refuse),
        Op::Here(Netlink),
        Op::Load(ARG2),
        Op::Jeq(NETLINK_USERSOCK, Refuse, Allow),
        Op::Here(Pair),
        Op::Load(ARG1),
        Op::And(SOCK_TYPE_MASK),
        Op::Jeq(word(libc::SOCK_STREAM), Allow, Next),
        Op::Jeq(word(libc::SOCK_SEQPACKET), Allow, datagram_pair),
        Op::Here(Allow),
        Op::Return(ALLOWED),
        Op::Here(Refuse),
        Op::Return(REFUSED),
    ]);
    assemble(&ops)
}

/// Resolve the labels into relative jumps.
fn assemble(ops: &[Op]) -> Result<Vec<sock_filter>, SeccompError> {
    let mut places = Vec::new();
    let mut count = 0usize;
    for op in ops {
        match op {
            Op::Here(label) => places.push((*label, count)),
            _ => count += 1,
        }
    }
    let mut program = Vec::with_capacity(count);
    for op in ops {
        let at = program.len();
        let offset = |label: Label| -> Result<u8, SeccompError> {
            let target = match label {
                Label::Next => at + 1,
                label => places
                    .iter()
                    .find(|(l, _)| *l == label)
                    .map(|(_, place)| *place)
                    .ok_or_else(|| SeccompError::Assemble(format!("no place for {label:?}")))?,
            };
            target
                .checked_sub(at + 1)
                .and_then(|jump| u8::try_from(jump).ok())
                .ok_or_else(|| SeccompError::Assemble(format!("cannot jump to {label:?}")))
        };
        let (code, k, jt, jf) = match *op {
            Op::Here(_) => continue,
            Op::Load(offset) => (LD_W_ABS, offset, 0, 0),
            Op::And(mask) => (ALU_AND_K, mask, 0, 0),
            Op::Return(action) => (RET_K, action, 0, 0),
            Op::Jeq(k, yes, no) => (JMP_JEQ_K, k, offset(yes)?, offset(no)?),
            Op::Jset(k, yes, no) => (JMP_JSET_K, k, offset(yes)?, offset(no)?),
        };
        program.push(sock_filter { code, jt, jf, k });
    }
    Ok(program)
}

/// Whether the test hook asks for the filter to fail.
pub fn pretend_unavailable() -> bool {
    std::env::var_os(NO_SECCOMP_ENV).is_some_and(|v| !v.is_empty())
}

/// Install the filter on the calling thread (and so on what it starts and execs). Sets
/// `no_new_privs`. The error says why it could not be installed; the caller then must not run
/// the command. `allow_unix`: see [`program`]; `unavailable` (the test hook) fails it on purpose.
pub fn install(allow_unix: bool, unavailable: bool) -> Result<(), SeccompError> {
    if unavailable {
        return Err(SeccompError::Unavailable);
    }
    let program = program(allow_unix)?;
    seccompiler::apply_filter(&program).map_err(|error| SeccompError::Install(error.to_string()))
}

/// Why the filter that refuses Unix sockets is not in place (the command must not run).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeccompError {
    #[error("Unix sockets cannot be refused on {0} (no seccomp filter for it)")]
    Architecture(&'static str),
    #[error("cannot install the filter that refuses Unix sockets ({NO_SECCOMP_ENV} is set)")]
    Unavailable,
    #[error("cannot install the filter that refuses Unix sockets: {0}")]
    Install(String),
    /// A filter this module wrote wrongly (a bug, caught before it is installed).
    #[error("seccomp filter: {0}")]
    Assemble(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic BPF interpreter for the few opcodes the filter uses, over one
    /// `seccomp_data`: the filter's verdict, so every branch is checked without installing it.
    fn verdict(program: &[sock_filter], arch: u32, nr: u32, args: [u64; 3]) -> u32 {
        let field = |offset: u32| -> u32 {
            match offset {
                NR => nr,
                ARCH_OFFSET => arch,
                ARG0 => args[0] as u32,
                ARG1 => args[1] as u32,
                ARG2 => args[2] as u32,
                other => panic!("load of offset {other}"),
            }
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let op = &program[pc];
            pc += 1;
            match op.code {
                LD_W_ABS => acc = field(op.k),
                ALU_AND_K => acc &= op.k,
                JMP_JEQ_K => pc += usize::from(if acc == op.k { op.jt } else { op.jf }),
                JMP_JSET_K => pc += usize::from(if acc & op.k != 0 { op.jt } else { op.jf }),
                RET_K => return op.k,
                other => panic!("opcode {other:#x}"),
            }
        }
    }

    fn check(arch: u32, nr: libc::c_long, args: [u64; 3]) -> u32 {
        let program = program(false).expect("program false");
        verdict(&program, arch, word(nr), args)
    }

    fn native() -> u32 {
        ARCH.unwrap_or_else(|| panic!("no filter for this architecture"))
    }

    #[test]
    fn unix_sockets_are_refused_and_other_families_allowed() {
        let unix = libc::AF_UNIX as u64;
        let stream = libc::SOCK_STREAM as u64;
        assert_eq!(
            check(native(), libc::SYS_socket, [unix, stream, 0]),
            REFUSED
        );
        // The kernel reads the family as an int: high bits change nothing.
        assert_eq!(
            check(native(), libc::SYS_socket, [unix | 1 << 32, stream, 0]),
            REFUSED
        );
        assert_eq!(
            check(
                native(),
                libc::SYS_socket,
                [libc::AF_INET as u64, stream, 0]
            ),
            ALLOWED
        );
        assert_eq!(
            check(
                native(),
                libc::SYS_socket,
                [libc::AF_INET6 as u64, stream, 0]
            ),
            ALLOWED
        );
    }

    #[test]
    fn families_that_reach_other_programs_are_refused() {
        let raw = libc::SOCK_RAW as u64;
        let netlink = libc::AF_NETLINK as u64;
        let socket = |family: libc::c_int, protocol: u64| {
            check(native(), libc::SYS_socket, [family as u64, raw, protocol])
        };
        // The VM's host, and every family nothing ordinary needs, are refused.
        for family in [
            libc::AF_VSOCK,
            libc::AF_PACKET,
            libc::AF_TIPC,
            libc::AF_ALG,
            0,
            255,
        ] {
            assert_eq!(socket(family, 0), REFUSED, "{family}");
        }
        // Netlink: the kernel's protocols (routing for `getifaddrs`, uevents) but not the one
        // processes send each other messages on, whatever the high half says.
        assert_eq!(socket(libc::AF_NETLINK, 0), ALLOWED);
        assert_eq!(socket(libc::AF_NETLINK, 15), ALLOWED);
        assert_eq!(
            socket(libc::AF_NETLINK, u64::from(NETLINK_USERSOCK)),
            REFUSED
        );
        let high = u64::from(NETLINK_USERSOCK) | 1 << 32;
        assert_eq!(
            check(native(), libc::SYS_socket, [netlink, raw, high]),
            REFUSED
        );
    }

    #[test]
    fn allowing_unix_sockets_lifts_that_part_only() {
        let program = program(true).expect("program true");
        let (unix, stream) = (libc::AF_UNIX as u64, libc::SOCK_STREAM as u64);
        let socket = word(libc::SYS_socket);
        let pair = word(libc::SYS_socketpair);
        assert_eq!(
            verdict(&program, native(), socket, [unix, stream, 0]),
            ALLOWED
        );
        let datagram = libc::SOCK_DGRAM as u64;
        assert_eq!(
            verdict(&program, native(), pair, [unix, datagram, 0]),
            ALLOWED
        );
        let vsock = libc::AF_VSOCK as u64;
        assert_eq!(
            verdict(&program, native(), socket, [vsock, stream, 0]),
            REFUSED
        );
        let uring = word(libc::SYS_io_uring_setup);
        assert_eq!(verdict(&program, native(), uring, [0, 0, 0]), REFUSED);
    }

    #[test]
    fn connected_pairs_are_allowed_but_datagram_pairs_refused() {
        let unix = libc::AF_UNIX as u64;
        let flags = (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u64;
        for allowed in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
            let kind = allowed as u64 | flags;
            assert_eq!(
                check(native(), libc::SYS_socketpair, [unix, kind, 0]),
                ALLOWED
            );
        }
        // A datagram socket can `sendto` any path; SOCK_RAW is a datagram one for AF_UNIX.
        for refused in [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_RDM] {
            let kind = refused as u64 | flags;
            assert_eq!(
                check(native(), libc::SYS_socketpair, [unix, kind, 0]),
                REFUSED
            );
        }
    }

    #[test]
    fn the_ways_around_are_closed() {
        for nr in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
            libc::SYS_pidfd_getfd,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_keyctl,
        ] {
            assert_eq!(check(native(), nr, [0, 0, 0]), REFUSED, "{nr}");
        }
        // Another architecture's syscalls (i386's `socketcall` is 102), whatever their number.
        const AUDIT_ARCH_I386: u32 = 0x4000_0003;
        for nr in [0, 102, 359] {
            let program = program(false).expect("program false");
            assert_eq!(verdict(&program, AUDIT_ARCH_I386, nr, [0, 0, 0]), REFUSED);
        }
        // x32 numbers: the native number with bit 30 set.
        let program = program(false).expect("program false");
        let x32_socket = word(libc::SYS_socket) | X32_BIT;
        let x32_read = word(libc::SYS_read) | X32_BIT;
        assert_eq!(verdict(&program, native(), x32_socket, [1, 1, 0]), REFUSED);
        assert_eq!(verdict(&program, native(), x32_read, [0, 0, 0]), REFUSED);
        // Everything else runs.
        for nr in [libc::SYS_read, libc::SYS_connect, libc::SYS_execve] {
            assert_eq!(check(native(), nr, [1, 1, 0]), ALLOWED);
        }
    }

    /// The real filter on a thread of its own (filters are per thread without TSYNC): the
    /// kernel accepts the program and enforces it.
    #[test]
    fn installed_it_refuses_unix_sockets_with_permission_denied() {
        let outcome = std::thread::spawn(|| {
            assert!(install(false, true).is_err());
            install(false, false)?;
            let dir = std::env::temp_dir();
            let connect = std::os::unix::net::UnixStream::connect(dir.join("no-such-socket"));
            let kind = connect.err().map(|e| e.kind());
            let pair = std::os::unix::net::UnixStream::pair().is_ok();
            let datagram_pair = std::os::unix::net::UnixDatagram::pair().is_ok();
            let udp = std::net::UdpSocket::bind("127.0.0.1:0").is_ok();
            Ok::<_, SeccompError>((kind, pair, datagram_pair, udp))
        })
        .join()
        .unwrap_or_else(|_| panic!("the thread panicked"))
        .expect("unwrap or else");
        assert_eq!(
            outcome,
            (
                Some(std::io::ErrorKind::PermissionDenied),
                true,
                false,
                true
            )
        );
    }
}
