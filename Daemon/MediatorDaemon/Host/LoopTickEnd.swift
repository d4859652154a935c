import NIOPosix

/// The end of each event-loop iteration, after its reads and its tasks: the
/// host flushes there, so that lines read from many connections in one
/// iteration and bound for one component leave in one write, not one per
/// connection read. NIO reports the end of an iteration only to a metrics
/// delegate, which is what this is (it costs two clock reads per iteration;
/// a task queued per read cycle instead cost about 4,000 instructions).
///
/// `@unchecked Sendable`: `host` is set on the loop (before any connection)
/// and read only there.
final class LoopTickEnd: NIOEventLoopMetricsDelegate, @unchecked Sendable {
    var host: BrokerHost?

    func processedTick(info: NIOEventLoopTickInfo) {
        host?.flush()
    }
}
