import CSystemd  // sys/epoll.h, which Glibc lacks
import Glibc
import MediatorEventLoop

/// One byte back and forth over a Unix stream socket pair, for a number of
/// round trips, with the pinging side driven by sd-event (through
/// MediatorEventLoop's closures), by a plain epoll loop or by a plain poll
/// loop: what one I/O dispatch through the loop costs (issue 26: "sd-event or
/// own epoll").
package enum PingPong {
    /// What waits for readiness on the pinging side.
    package enum Driver: String, CaseIterable, Sendable {
        case sdEvent = "sd-event"
        case epoll
        case poll
    }

    /// Where the echoing side runs.
    package enum Peer: String, CaseIterable, Sendable {
        /// In the same loop, on the same thread: no wake-up of another thread,
        /// so the figure is the loop's own cost (2 dispatches, 2 reads, 2
        /// writes and the waits per round trip).
        case sameLoop = "same loop"
        /// An sd-event loop on another thread (the same for every driver):
        /// each round trip also wakes two threads, as between a daemon and a
        /// client.
        case otherThread = "other thread"
    }

    package struct Measurement: Sendable {
        package let driver: Driver
        package let peer: Peer
        package let roundTrips: Int
        package let elapsed: Duration

        package var perRoundTrip: Duration { elapsed / roundTrips }
    }

    package static func measure(_ driver: Driver, peer: Peer, roundTrips: Int) throws(SDEventError) -> Measurement {
        let rally = try Rally(roundTrips: max(roundTrips, 1))
        let echo = peer == .otherThread ? try rally.echoOnAThreadOfItsOwn() : nil
        let pinging = peer == .sameLoop ? [rally.a, rally.b] : [rally.a]
        let started = ContinuousClock.now
        switch driver {
        case .sdEvent: try rally.runOnSDEvent(pinging)
        case .epoll: try rally.runOnEpoll(pinging)
        case .poll: try rally.runOnPoll(pinging)
        }
        let elapsed = ContinuousClock.now - started
        // Joined: the echo source may go on this thread now.
        try echo?.thread.stop()
        echo?.source.cancel()
        return Measurement(driver: driver, peer: peer, roundTrips: rally.completed, elapsed: elapsed)
    }
}

/// The socket pair and the count: `a` pings, `b` echoes.
private final class Rally {
    let a: Int32
    let b: Int32
    let roundTrips: Int
    private(set) var completed = 0
    private var byte: UInt8 = 0

    init(roundTrips: Int) throws(SDEventError) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0
        else { throw SDEventError("socketpair", errno: errno) }
        a = fds[0]
        b = fds[1]
        self.roundTrips = roundTrips
    }

    deinit {
        close(a)
        close(b)
    }

    /// The step on a readable FD: `b` echoes, `a` counts and pings again.
    /// False once every round trip is done.
    func readable(_ fd: Int32) -> Bool {
        _ = read(fd, &byte, 1)
        if fd == b {
            _ = write(b, &byte, 1)
            return true
        }
        completed += 1
        guard completed < roundTrips else { return false }
        _ = write(a, &byte, 1)
        return true
    }

    private func firstPing() { _ = write(a, &byte, 1) }

    func runOnSDEvent(_ fds: [Int32]) throws(SDEventError) {
        let loop = try SDEventLoop()
        var sources: [IOSource] = []
        for fd in fds {
            sources.append(try loop.addIO(fd: fd, events: .readable) { [unowned self] source, _ in
                if !readable(source.fd) { try? loop.exit() }
            })
        }
        firstPing()
        try loop.run()
        sources.forEach { $0.cancel() }
    }

    func runOnEpoll(_ fds: [Int32]) throws(SDEventError) {
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw SDEventError("epoll_create1", errno: errno) }
        defer { close(epoll) }
        for fd in fds {
            var event = epoll_event()
            event.events = UInt32(EPOLLIN.rawValue)
            event.data.fd = fd
            guard epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 else { throw SDEventError("epoll_ctl", errno: errno) }
        }
        var ready = [epoll_event](repeating: epoll_event(), count: 4)
        firstPing()
        while true {
            let count = epoll_wait(epoll, &ready, Int32(ready.count), -1)
            guard count >= 0 else {
                if errno == EINTR { continue }
                throw SDEventError("epoll_wait", errno: errno)
            }
            for index in 0..<Int(count) where !readable(ready[index].data.fd) { return }
        }
    }

    func runOnPoll(_ fds: [Int32]) throws(SDEventError) {
        var watched = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        firstPing()
        while true {
            let count = poll(&watched, nfds_t(watched.count), -1)
            guard count >= 0 else {
                if errno == EINTR { continue }
                throw SDEventError("poll", errno: errno)
            }
            for index in watched.indices where watched[index].revents != 0 {
                if !readable(watched[index].fd) { return }
            }
        }
    }

    /// Echoes `b` on an sd-event loop of its own thread; the source is the
    /// loop thread's until the thread is stopped.
    func echoOnAThreadOfItsOwn() throws(SDEventError) -> (thread: SDEventLoopThread, source: IOSource) {
        let loop = try SDEventLoop()
        let source = try loop.addIO(fd: b, events: .readable) { source, _ in
            var byte: UInt8 = 0
            if read(source.fd, &byte, 1) == 1 { _ = write(source.fd, &byte, 1) }
        }
        return (try loop.start(), source)
    }
}
