import MediatorStatistics
import NIOCore

/// One rendering of the metrics shared by the scrapes that overlap it: a
/// scrape that comes while one is being made waits for it, and one that
/// comes while another connection is still sending it gets it too, unless
/// it is ``maxAge`` old. So a burst of scrapes costs one snapshot and one
/// text, not one each, and the bytes are handed out, never copied whole per
/// connection. With ``maxAge`` the connection timeout, at most two
/// renderings of a kind are alive at once: the holders of one are gone by
/// the time the one after next is made.
actor ScrapeRenderings {
    /// The text of one rendering; immutable, shared by the connections sending it.
    final class Rendering: Sendable {
        let bytes: [UInt8]
        let madeAt: ContinuousClock.Instant
        /// Run once the last connection sending it let go of it.
        let onRelease: @Sendable () -> Void
        init(bytes: [UInt8], madeAt: ContinuousClock.Instant, onRelease: @escaping @Sendable () -> Void) {
            self.bytes = bytes
            self.madeAt = madeAt
            self.onRelease = onRelease
        }
        deinit { onRelease() }
    }

    let exposition: PrometheusExposition
    let source: MetricsEndpoint.Source
    let maxAge: Duration
    /// Where the text is written: always the endpoint's one thread, so its
    /// allocations reuse one malloc arena instead of growing one per thread
    /// of the concurrency pool that happens to run a rendering.
    let eventLoop: any EventLoop
    /// Called when a rendering is let go (mediatord: malloc_trim, so that
    /// the megabytes of a large text go back to the system, not stay in a
    /// malloc arena of the endpoint's thread).
    let releaseMemory: @Sendable () -> Void
    /// The latest rendering of each kind (with and without the per-uid
    /// series), held only as long as some connection still sends it: an idle
    /// endpoint keeps no text.
    private var latest: [Bool: WeakRendering] = [:]
    private var inProgress: [Bool: Task<Rendering?, Never>] = [:]

    struct WeakRendering {
        weak var rendering: Rendering?
    }

    init(
        exposition: PrometheusExposition, maxAge: Duration, eventLoop: any EventLoop,
        releaseMemory: @escaping @Sendable () -> Void, source: @escaping MetricsEndpoint.Source
    ) {
        self.releaseMemory = releaseMemory
        self.exposition = exposition
        self.maxAge = maxAge
        self.eventLoop = eventLoop
        self.source = source
    }

    /// The metrics now, with or without the per-uid series; nil once the broker is gone.
    func rendering(uidSeries: Bool) async -> Rendering? {
        if let task = inProgress[uidSeries] { return await task.value }
        if let recent = latest[uidSeries]?.rendering, ContinuousClock.now - recent.madeAt < maxAge { return recent }
        let (exposition, source, eventLoop, releaseMemory) = (exposition, source, eventLoop, releaseMemory)
        let task = Task<Rendering?, Never> {
            guard let snapshot = await source() else { return nil }
            return try? await eventLoop.submit {
                Rendering(bytes: exposition.render(snapshot, uidSeries: uidSeries), madeAt: .now, onRelease: releaseMemory)
            }.get()
        }
        inProgress[uidSeries] = task
        let made = await task.value
        inProgress[uidSeries] = nil
        latest[uidSeries] = WeakRendering(rendering: made)
        return made
    }
}

