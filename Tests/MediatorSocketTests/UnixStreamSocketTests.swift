import SocketTesting
import Testing

@testable import MediatorSocket

#if canImport(Glibc)
import Glibc
#endif

@Suite struct UnixStreamSocketTests {
    @Test func bytesAndDescriptorsArriveTogetherCloseOnExec() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            try left.sendAll("hello\n", descriptors: [try watch.memfd("first"), try watch.memfd("second")])
            let received = try #require(try right.receiveOnce())
            #expect(received.bytes == Array("hello\n".utf8))
            #expect(!received.truncated)
            #expect(try received.descriptors.map(LeakWatch.contents(of:)) == ["first", "second"])
            for descriptor in received.descriptors {
                let raw = try #require(descriptor.rawValue)
                #expect(fcntl(raw, F_GETFD) & FD_CLOEXEC != 0)
            }
        }
    }

    @Test func twoHundredFiftyThreeDescriptorsInOneMessage() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            let file = try watch.memfd("shared")
            let descriptors = try (0..<UnixStreamSocket.maxDescriptorsPerMessage).map { _ in try file.duplicate() }
            try left.sendAll("x", descriptors: descriptors)
            for descriptor in descriptors { try descriptor.close() }
            let received = try #require(try right.receiveOnce())
            #expect(received.descriptors.count == 253)
            #expect(!received.truncated)
            #expect(try LeakWatch.contents(of: #require(received.descriptors.last)) == "shared")
        }
    }

    @Test func moreThanTheKernelPassesIsRefusedBeforeSending() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            let file = try watch.memfd()
            let descriptors = try (0...UnixStreamSocket.maxDescriptorsPerMessage).map { _ in try file.duplicate() }
            #expect(throws: SocketError.tooManyDescriptors(count: 254, maximum: 253)) {
                try Array("x".utf8).withUnsafeBytes { try left.send($0, descriptors: descriptors) }
            }
            #expect(try right.receiveOnce() == nil)
        }
    }

    @Test func truncatedDescriptorsAreReportedAndClosed() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            try left.sendAll("{}\n", descriptors: try (0..<5).map { _ in try watch.memfd() })
            // The senders' copies are gone: only in-flight ones could remain.
            let received = try #require(try right.receiveOnce(descriptorCapacity: 2))
            #expect(received.truncated)
            #expect(received.descriptors.isEmpty)
            #expect(received.bytes == Array("{}\n".utf8))
            #expect(watch.openCount == 2, "the two sockets only")
        }
    }

    @Test func nothingToReadIsWouldBlock() throws {
        try expectNoLeaks { watch in
            // Both ends live: with the writer gone it would be the end of the stream.
            let (left, right) = try watchedPair(watch)
            var buffer = [UInt8](repeating: 0, count: 16)
            let outcome = try withExtendedLifetime(left) {
                try buffer.withUnsafeMutableBytes { try right.receive(into: $0) }
            }
            guard case .wouldBlock = outcome else {
                Issue.record("expected wouldBlock, got \(outcome)")
                return
            }
        }
    }

    @Test func closedPeerIsEndOfStreamAndEPIPE() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            try left.sendAll("last\n")
            try left.close()
            #expect(try right.receiveOnce()?.bytes == Array("last\n".utf8))
            var buffer = [UInt8](repeating: 0, count: 16)
            let outcome = try buffer.withUnsafeMutableBytes { try right.receive(into: $0) }
            guard case .endOfStream = outcome else {
                Issue.record("expected endOfStream, got \(outcome)")
                return
            }
            // MSG_NOSIGNAL: an error, not SIGPIPE (which would end the test run).
            let error = #expect(throws: SocketError.self) {
                try Array("x".utf8).withUnsafeBytes { try right.send($0, descriptors: [try watch.memfd()]) }
            }
            #expect(error == .system(.send, errno: EPIPE))
            #expect(error?.isPeerGone == true)
        }
    }

    @Test func partialWritesAndWouldBlockWithASmallSendBuffer() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            try left.setSendBuffer(4096)
            let payload = [UInt8](repeating: 0x61, count: 1 << 20)
            let first = try payload.withUnsafeBytes { try left.send($0, descriptors: [try watch.memfd("rides")]) }
            guard case .sent(let written) = first else {
                Issue.record("expected a partial write, got \(first)")
                return
            }
            #expect(written > 0 && written < payload.count)
            #expect(try payload[written...].withUnsafeBytes { try left.send(UnsafeRawBufferPointer(rebasing: $0[...])) } == .wouldBlock)
            var total = 0
            var descriptors: [OwnedDescriptor] = []
            while let received = try right.receiveOnce(capacity: 65536) {
                total += received.bytes.count
                descriptors += received.descriptors
            }
            #expect(total == written)
            #expect(try descriptors.map(LeakWatch.contents(of:)) == ["rides"])
        }
    }

    @Test func emptyBuffersAreRefused() throws {
        try expectNoLeaks { watch in
            let (left, _) = try watchedPair(watch)
            #expect(throws: SocketError.emptyBuffer) {
                try [UInt8]().withUnsafeBytes { try left.send($0, descriptors: [try watch.memfd()]) }
            }
        }
    }

    @Test func peerCredentialsAreThisProcess() throws {
        let (left, _) = try UnixStreamSocket.pair()
        #expect(try left.peerCredentials() == UnixCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
    }

    @Test func listenConnectAcceptAndAdopt() throws {
        try expectNoLeaks { watch in
            let path = "/tmp/mediator-socket-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
            defer { unlink(path) }
            let listener = try UnixListener.listen(path: path, backlog: 8)
            #expect(try listener.accept() == nil)
            let client = try UnixStreamSocket.connect(path: path)
            let server = try #require(try listener.accept())
            try watch.watch(client, server)
            #expect(try server.peerCredentials().pid == getpid())
            try client.sendAll("hi", descriptors: [try watch.memfd("adopted")])
            let received = try #require(try server.receiveOnce())
            #expect(try received.descriptors.map(LeakWatch.contents(of:)) == ["adopted"])

            // Socket activation hands over a listener; an inherited connection is adopted alike.
            let adoptedListener = try UnixListener(adopting: listener.descriptor.duplicate())
            _ = try UnixStreamSocket.connect(path: path)
            #expect(try adoptedListener.accept() != nil)
            let adoptedServer = try UnixStreamSocket(adopting: server.descriptor.duplicate())
            try client.sendAll("again")
            #expect(try adoptedServer.receiveOnce()?.bytes == Array("again".utf8))
        }
    }

    @Test func adoptingSomethingElseIsRefused() throws {
        try expectNoLeaks { watch in
            let file = try watch.memfd()
            #expect(throws: SocketError.system(.getOption, errno: ENOTSOCK)) { try UnixStreamSocket(adopting: file) }
            let (left, _) = try watchedPair(watch)
            #expect(throws: SocketError.notUnixStreamSocket(descriptor: try #require(left.descriptor.rawValue))) {
                try UnixListener(adopting: left.descriptor)
            }
        }
    }

    @Test func pathsLongerThanSockaddrAreRefused() {
        let path = "/tmp/" + String(repeating: "p", count: 200)
        #expect(throws: SocketError.pathTooLong(path: path, maximum: UnixSocketAddress.maxPathBytes)) {
            try UnixStreamSocket.connect(path: path)
        }
    }
}

@Suite struct OwnedDescriptorTests {
    @Test func closesOnceWhenTheLastReferenceGoes() throws {
        try expectNoLeaks { watch in
            var descriptor: OwnedDescriptor? = try watch.memfd()
            #expect(watch.openCount == 1)
            descriptor = nil
            #expect(descriptor == nil)
            #expect(watch.openCount == 0)
        }
    }

    @Test func takenDescriptorsStayOpenForTheTaker() throws {
        try expectNoLeaks { watch in
            let raw = try #require(try watch.memfd().take())
            #expect(watch.openCount == 1)
            #expect(close(raw) == 0)
        }
    }

    @Test func closingTwiceClosesOnce() throws {
        try expectNoLeaks { watch in
            let descriptor = try watch.memfd()
            try descriptor.close()
            try descriptor.close()
            #expect(descriptor.rawValue == nil)
            #expect(descriptor.take() == nil)
            #expect(throws: SocketError.descriptorReleased) { try descriptor.duplicate() }
        }
    }
}
