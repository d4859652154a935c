import Foundation
import Glibc

/// Why the run could not go on; printed as its FAIL line.
struct ChaosFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    static func sys(_ what: String, _ code: Int32 = errno) -> ChaosFailure {
        ChaosFailure("\(what): \(String(cString: strerror(code)))")
    }
}

/// Writes a line on stderr; usable from anywhere but a signal handler.
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
