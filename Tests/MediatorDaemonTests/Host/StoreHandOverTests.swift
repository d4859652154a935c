import Logging
import Synchronization
import Testing

@testable import MediatorDaemon

#if canImport(Glibc)
import Glibc
#endif

/// The next daemon's reading of a restart's hand-over from the fd store
/// (docs/systemd.md, "Restart: a hand-over through the fd store"): the
/// descriptors systemd passes have other numbers, found again by name.
/// The store itself needs systemd (the nspawn suite's `restart-keeps-everything`).
@Suite("Restart hand-over: descriptors found again in the fd store")
struct StoreHandOverTests {
    /// A descriptor of its own (one end of a pipe), as systemd passes one.
    static func descriptor() -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return -1 }
        close(ends[1])
        return ends[0]
    }

    static func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) >= 0 }

    /// The sample hand-over of ``ReexecHandOverTests`` (listener 5, connection 3 on fd 7, a descriptor it carried on fd 9).
    static func memfd(_ bytes: [UInt8] = ReexecHandOverTests.sample().encoded()) throws -> Int32 {
        try SealedMemfd.create(bytes, name: "store-test")
    }

    @Test func theHeadersDescriptorsAreMappedByName() throws {
        let (listener, connection, carried, stray) = (Self.descriptor(), Self.descriptor(), Self.descriptor(), Self.descriptor())
        defer { for fd in [listener, connection, carried, stray] { close(fd) } }
        let removed = Mutex<[String]>([])
        let found = ReexecInheritance.fromStore(
            memfd: try Self.memfd(), listener: listener,
            stored: [("connection-3", connection), ("handover-fd-9", carried), ("connection-8", stray)],
            remove: { name in removed.withLock { $0.append(name) } }, logger: Logger(label: "test"))
        let handOver = try found.inheritance.handOver.get().value
        #expect(handOver.descriptors == [
            .init(fd: listener, role: .listener), .init(fd: connection, role: .connection, connection: 3), .init(fd: carried, role: .carried),
        ])
        #expect(found.inheritance.origin == .fdStore)
        // The state itself is the predecessor's, unchanged.
        #expect(handOver.host.reexecs == 4)
        #expect(handOver.broker == ReexecHandOverTests.sample().broker)
        // The memfd and the carried descriptor leave the store; connections stay in it.
        #expect(removed.withLock { $0 } == ["handover", "handover-fd-9"])
        // A connection the hand-over does not name is left to the caller.
        #expect(found.unclaimed.map(\.name) == ["connection-8"])
        #expect(Self.isOpen(stray))
    }

    @Test func aDescriptorSystemdDroppedStandsInAsHungUp() throws {
        // systemd drops a stored descriptor that reports a hang-up: a peer that went during the restart.
        let (listener, carried) = (Self.descriptor(), Self.descriptor())
        defer { for fd in [listener, carried] { close(fd) } }
        let found = ReexecInheritance.fromStore(
            memfd: try Self.memfd(), listener: listener, stored: [("handover-fd-9", carried)], remove: { _ in },
            logger: Logger(label: "test"))
        let handOver = try found.inheritance.handOver.get().value
        #expect(handOver.descriptors.map(\.role) == [.listener, .connection, .carried])
        let standIn = handOver.descriptors[1].fd
        defer { close(standIn) }
        #expect(![listener, carried].contains(standIn))
        // Its peer is gone: a read ends at once.
        var byte: UInt8 = 0
        #expect(read(standIn, &byte, 1) == 0)
        #expect(found.unclaimed.isEmpty)
    }

    @Test func anUnreadableHandOverLeavesTheConnectionsToTheCrashPath() throws {
        let (listener, connection, carried) = (Self.descriptor(), Self.descriptor(), Self.descriptor())
        defer { for fd in [listener, connection] { close(fd) } }
        let found = ReexecInheritance.fromStore(
            memfd: try Self.memfd(Array("not a hand-over\n".utf8)), listener: listener,
            stored: [("connection-3", connection), ("handover-fd-9", carried)], remove: { _ in }, logger: Logger(label: "test"))
        #expect(throws: ReexecError.self) { try found.inheritance.handOver.get() }
        #expect(found.inheritance.descriptors == [.init(fd: listener, role: .listener)])
        #expect(found.unclaimed.map(\.name) == ["connection-3"])
        // `carried` is closed by fromStore (nobody can place it); not checked
        // by number, which tests running alongside may reuse at once.
        _ = carried
    }
}
