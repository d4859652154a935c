import Logging
#if canImport(Glibc)
import Glibc
#endif

/// What a new image of mediatord found at start when its predecessor
/// re-executed it: the hand-over read from the memfd that
/// `MEDIATORD_HANDOVER_FD` names, or why it could not be read, with the
/// descriptors it lists when they at least could (for a clean restart).
package struct ReexecInheritance: Sendable {
    let handOver: Result<ReexecHandOverBox, ReexecError>
    /// Listed in the header, readable even when the rest is not.
    let descriptors: [ReexecHandOver.Descriptor]

    package enum Origin: Sendable, Equatable {
        /// The same process, re-executed (`MEDIATORD_HANDOVER_FD`).
        case reexec
        /// A new process after `systemctl restart`, from the fd store.
        case fdStore
    }

    package var origin: Origin = .reexec

    /// The path components are told to connect to, when it could be read.
    package var advertisedPath: String? { try? handOver.get().value.host.advertisedPath }
    /// The socket file the first image bound, to remove at the final stop.
    package var boundPath: String? { try? handOver.get().value.host.boundPath }

    /// Reads and removes `MEDIATORD_HANDOVER_FD` (children must not see
    /// it), reads the memfd and closes it, and puts close-on-exec back on
    /// every descriptor listed. Nil when the variable is not set: a first start.
    package static func take(logger: Logger) -> ReexecInheritance? {
        guard let raw = getenv(ReexecHandOver.environmentVariable) else { return nil }
        let text = String(cString: raw)
        unsetenv(ReexecHandOver.environmentVariable)
        ReexecImage.unblockSignalsAfterReexec()
        guard let fd = Int32(text), fd >= 0 else {
            logger.error("ignoring \(ReexecHandOver.environmentVariable): not a descriptor number", metadata: ["value": "\(text)"])
            return ReexecInheritance(handOver: .failure(.handOver("\(ReexecHandOver.environmentVariable)=\(text) is not a descriptor")), descriptors: [])
        }
        let bytes: [UInt8]
        do {
            bytes = try SealedMemfd.read(fd, limit: ReexecHandOver.maxEncodedBytes)
        } catch {
            close(fd)
            return ReexecInheritance(handOver: .failure(error), descriptors: [])
        }
        close(fd)
        let descriptors = ReexecHandOver.descriptors(in: bytes) ?? []
        CloseOnExec.set(true, on: descriptors.map(\.fd))
        do {
            return ReexecInheritance(handOver: .success(ReexecHandOverBox(value: try ReexecHandOver.decode(bytes))), descriptors: descriptors)
        } catch {
            return ReexecInheritance(handOver: .failure(error), descriptors: descriptors)
        }
    }
}

/// Sendable wrapper: the hand-over is plain bytes and numbers, read once on the loop.
struct ReexecHandOverBox: @unchecked Sendable {
    let value: ReexecHandOver
}
