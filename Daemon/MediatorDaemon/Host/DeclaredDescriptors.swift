#if canImport(Glibc)
import Glibc
#endif
import MediatorProtocol

/// How many descriptors a line declares (its top-level `fds`), for the
/// socket layer that hands each line the descriptors that came with it.
/// Most lines carry none and do not contain `"fds"` at all: those are told
/// apart by a byte search, and only the others are parsed.
enum DeclaredDescriptors {
    private static let member = Array("\"fds\"".utf8)

    static func count(in line: [UInt8]) -> Int? {
        guard contains(line, member) else { return nil }
        var envelope = Envelope(kind: .request)
        let failed = line.withUnsafeBytes { EnvelopeParser.parse($0, into: &envelope) } != nil
        return failed || envelope.fds == 0 ? nil : envelope.fds
    }

    /// Whether `bytes` contains `needle` (which starts with a quote): memchr
    /// finds each quote, and only those are compared.
    private static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count else { return false }
        return bytes.withUnsafeBytes { haystack in
            guard let base = haystack.baseAddress else { return false }
            var offset = 0
            let last = haystack.count - needle.count
            while offset <= last {
                guard let found = memchr(base + offset, Int32(needle[0]), last - offset + 1) else { return false }
                let position = base.distance(to: UnsafeRawPointer(found))
                if memcmp(base + position, needle, needle.count) == 0 { return true }
                offset = position + 1
            }
            return false
        }
    }
}
