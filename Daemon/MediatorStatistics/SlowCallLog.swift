/// A call whose final answer came after the slow-call threshold.
package struct SlowCall: Sendable, Equatable {
    package var target: String
    package var action: String
    /// The caller; nil when it was already gone.
    package var pid: Int32?
    package var uid: UInt32?
    package var durationNanoseconds: Int64
    /// `ok` for a result, else the error code.
    package var code: String
    /// When it ended, in nanoseconds since the statistics began.
    package var endedAtNanoseconds: Int64

    package init(
        target: String, action: String, pid: Int32?, uid: UInt32?, durationNanoseconds: Int64, code: String,
        endedAtNanoseconds: Int64
    ) {
        self.target = target
        self.action = action
        self.pid = pid
        self.uid = uid
        self.durationNanoseconds = durationNanoseconds
        self.code = code
        self.endedAtNanoseconds = endedAtNanoseconds
    }
}

/// The last `capacity` slow calls, a ring: memory stays fixed however many there are.
package struct SlowCallLog: Sendable, Equatable {
    package let capacity: Int
    private var storage: [SlowCall] = []
    /// Where the next entry goes once the ring is full.
    private var next = 0
    /// Every slow call seen, the ones dropped from the ring too.
    package private(set) var total = 0

    package init(capacity: Int = 64) { self.capacity = max(1, capacity) }

    package mutating func append(_ call: SlowCall) {
        total += 1
        if storage.count < capacity {
            storage.append(call)
        } else {
            storage[next] = call
            next = (next + 1) % capacity
        }
    }

    /// Oldest first.
    package var entries: [SlowCall] { Array(storage[next...] + storage[..<next]) }
}
