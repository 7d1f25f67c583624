//! Thin wrappers over the system calls the router needs: the TUN device, interface
//! ioctls, signalfd, eventfd, ppoll, sysctls and the `ip` command.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;
use std::time::Duration;

/// The result of a libc call returning -1 on error.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An `ifreq` with `name` in it.
fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not a device name"),
        ));
    }
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// Creates the TUN device `name` (IFF_TUN | IFF_NO_PI) and returns its file descriptor,
/// non-blocking. The device goes away when the descriptor is closed.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    // SAFETY: a constant C string; the returned descriptor is checked.
    let fd = check(unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = ifreq(name)?;
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes the ifreq we pass.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) })?;
    Ok(fd)
}

/// A datagram socket for interface ioctls (in the current network namespace).
fn ioctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation; the descriptor is checked and owned.
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: just created.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the network device `name` exists in this namespace.
pub fn dev_exists(name: &str) -> bool {
    let Ok(c) = CString::new(name) else {
        return false;
    };
    // SAFETY: a valid C string.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// The MTU of `name`.
pub fn dev_mtu(name: &str) -> io::Result<usize> {
    let socket = ioctl_socket()?;
    let mut req = ifreq(name)?;
    // SAFETY: SIOCGIFMTU fills the ifreq we pass.
    check(unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFMTU, &mut req) })?;
    // SAFETY: SIOCGIFMTU sets the mtu member of the union.
    Ok(usize::try_from(unsafe { req.ifr_ifru.ifru_mtu }).unwrap_or(0))
}

/// Reads a packet into `buf`: its length, `None` when none is waiting.
#[inline]
pub fn read_packet(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: writes at most buf.len() bytes into buf.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => return Ok(None),
            io::ErrorKind::Interrupted => continue,
            _ => return Err(e),
        }
    }
}

/// Writes one packet; false if the kernel refused it.
#[inline]
pub fn write_packet(fd: RawFd, packet: &[u8]) -> bool {
    loop {
        // SAFETY: reads packet.len() bytes from packet.
        let n = unsafe { libc::write(fd, packet.as_ptr().cast(), packet.len()) };
        if n >= 0 {
            return n as usize == packet.len();
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Blocks SIGTERM, SIGINT and SIGHUP in this thread (and the threads it starts later) and
/// returns a signalfd that reads them.
pub fn signal_fd() -> io::Result<OwnedFd> {
    // SAFETY: sigset manipulation on a local set, then a checked signalfd.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        let fd = check(libc::signalfd(
            -1,
            &set,
            libc::SFD_NONBLOCK | libc::SFD_CLOEXEC,
        ))?;
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// The signal waiting on a signalfd, if any.
pub fn read_signal(fd: RawFd) -> Option<u32> {
    // SAFETY: reads one signalfd_siginfo into a zeroed local.
    unsafe {
        let mut info: libc::signalfd_siginfo = std::mem::zeroed();
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        let n = libc::read(fd, (&mut info as *mut libc::signalfd_siginfo).cast(), size);
        (n as usize == size).then_some(info.ssi_signo)
    }
}

/// A non-blocking eventfd.
pub fn event_fd() -> io::Result<OwnedFd> {
    // SAFETY: checked, then owned.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: just created.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Resets an eventfd.
pub fn drain_event(fd: RawFd) {
    let mut value: u64 = 0;
    // SAFETY: reads 8 bytes into a local u64.
    unsafe {
        libc::read(fd, (&mut value as *mut u64).cast(), 8);
    }
}

/// Waits until one of `fds` is readable or `timeout` passes (`None`: no timeout); nanosecond
/// resolution. Fills each `revents`.
pub fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds is a valid slice of pollfd; ts_ptr is null or points to a live timespec.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

/// Asks for timers of this thread to fire as precisely as the kernel can (the default slack
/// of 50 µs is added to every delivery otherwise). Best effort.
pub fn precise_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes a value and changes only this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Makes the calling thread a SCHED_FIFO thread of `priority` (1..=99); the processes it
/// starts (`ip`) go back to the normal policy (SCHED_RESET_ON_FORK).
pub fn realtime(priority: u8) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: libc::c_int::from(priority),
    };
    // SAFETY: pid 0 is the calling thread; param is a live sched_param.
    check(unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    })
    .map(|_| ())
}

/// Reads a sysctl under /proc/sys (of the current network namespace for `net/...`).
pub fn read_sysctl(key: &str) -> io::Result<String> {
    Ok(std::fs::read_to_string(format!("/proc/sys/{key}"))?
        .trim()
        .to_string())
}

/// Writes a sysctl under /proc/sys.
pub fn write_sysctl(key: &str, value: &str) -> io::Result<()> {
    std::fs::write(format!("/proc/sys/{key}"), value)
}

/// Runs `ip ARGS`: its standard output, or an error with the command line and what `ip` said.
pub fn ip(args: &[&str]) -> Result<String, String> {
    let output = Command::new("ip").args(args).output().map_err(|e| {
        format!(
            "cannot run `ip` (iproute2) for `ip {}`: {e}",
            args.join(" ")
        )
    })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}
