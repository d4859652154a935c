import Glibc

/// A new, empty directory `/tmp/<prefix>.XXXXXX` (mode 0700, from mkdtemp).
/// The caller decides when it goes: the bench removes it, the chaos run
/// keeps it for its logs when it fails.
public func makeTemporaryDirectory(prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw ChildProcessError.sys("mkdtemp") }
    return String(cString: made)
}
