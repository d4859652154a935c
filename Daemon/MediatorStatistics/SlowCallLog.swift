/// A call whose final answer came after the slow-call threshold.
public struct SlowCall: Sendable, Equatable {
    public var target: String
    public var action: String
    /// The caller; nil when it was already gone.
    public var pid: Int32?
    public var uid: UInt32?
    public var durationNanoseconds: Int64
    /// `ok` for a result, else the error code.
    public var code: String
    /// When it ended, in nanoseconds since the statistics began.
    public var endedAtNanoseconds: Int64

    public init(
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
public struct SlowCallLog: Sendable, Equatable {
    public let capacity: Int
    private var storage: [SlowCall] = []
    /// Where the next entry goes once the ring is full.
    private var next = 0
    /// Every slow call seen, the ones dropped from the ring too.
    public private(set) var total = 0

    public init(capacity: Int = 64) { self.capacity = max(1, capacity) }

    public mutating func append(_ call: SlowCall) {
        total += 1
        if storage.count < capacity {
            storage.append(call)
        } else {
            storage[next] = call
            next = (next + 1) % capacity
        }
    }

    /// Oldest first.
    public var entries: [SlowCall] { Array(storage[next...] + storage[..<next]) }
}
