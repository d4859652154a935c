extension OutboundMessage {
    /// `frame` (a request or response line built above) with `"fds": count`
    /// as its first member: the message is sent with `count` descriptors
    /// (contract section 8). A `count` of 0, or a line that is not an
    /// object, is returned as is.
    public static func declaringDescriptors(_ count: Int, in frame: [UInt8]) -> [UInt8] {
        guard count > 0, frame.first == UInt8(ascii: "{"), frame.count > 2 else { return frame }
        var output: [UInt8] = []
        output.reserveCapacity(frame.count + 12)
        output.append(UInt8(ascii: "{"))
        output.append(contentsOf: "\"fds\":\(count)".utf8)
        // An empty object `{}` takes no comma.
        if frame[1] != UInt8(ascii: "}") { output.append(UInt8(ascii: ",")) }
        output.append(contentsOf: frame[1...])
        return output
    }
}
