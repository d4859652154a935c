import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// A pipe from the broker's event loop to itself, for yielding to reads.
///
/// NIO runs a task queued by a task in the same loop iteration, before any
/// socket is read, so a dispatch task cannot give way to other peers' lines
/// by queueing its successor. A byte written here makes the pipe readable:
/// the loop goes back to the kernel at once (no timer, so the thread never
/// sleeps while it has work), reads every ready socket, and then the handler
/// queues the next dispatch.
final class LoopWakePipe: @unchecked Sendable {
    private let writeFD: Int32
    let channel: any Channel
    /// A byte is in the pipe and not yet read; touched only on the loop.
    private var pending = false

    private init(writeFD: Int32, channel: any Channel) {
        self.writeFD = writeFD
        self.channel = channel
    }

    /// Opens the pipe on `eventLoop`; `onWake` runs on the loop each time the byte is read.
    static func open(on eventLoop: any EventLoop, onWake: @escaping @Sendable () -> Void) -> EventLoopFuture<LoopWakePipe> {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            return eventLoop.makeFailedFuture(IOError(errnoCode: errno, reason: "pipe"))
        }
        // The daemon starts components: neither end may leak into them.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        let (readFD, writeFD) = (fds[0], fds[1])
        let holder = NIOLoopBoundBox.makeEmptyBox(valueType: LoopWakePipe.self, eventLoop: eventLoop)
        return NIOPipeBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        WakeHandler { holder.value?.pending = false; onWake() })
                }
            }
            .takingOwnershipOfDescriptor(input: readFD)
            .map { channel in
                let wakePipe = LoopWakePipe(writeFD: writeFD, channel: channel)
                holder.value = wakePipe
                return wakePipe
            }
            .flatMapErrorThrowing { error in
                Glibc.close(readFD)
                Glibc.close(writeFD)
                throw error
            }
    }

    /// Asks for `onWake` after the loop's next round of reads; on the loop only.
    func wake() {
        guard !pending else { return }
        pending = true
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    func close() {
        channel.close(promise: nil)
        Glibc.close(writeFD)
    }
}

/// Reads the wake-up bytes and reports each read.
private final class WakeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let onWake: () -> Void

    init(onWake: @escaping () -> Void) { self.onWake = onWake }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onWake()
    }
}
