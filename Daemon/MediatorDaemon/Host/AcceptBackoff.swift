import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// When accepting connections fails for want of a resource (file
/// descriptors, kernel memory): how long the listener pauses, and when an
/// episode begins and ends, so that the log says so once per episode and not
/// once per refused connection. Pure: the caller passes the time.
///
/// The pause doubles with each failure in an episode, from `initialPause` to
/// at most `maximumPause`; the first accepted connection ends the episode and
/// resets it.
struct AcceptBackoff {
    /// Why accept failed, when it is a shortage that passes with time.
    enum Shortage: Equatable {
        /// EMFILE (the process's limit) or ENFILE (the system's): a
        /// descriptor held in reserve lets a waiting peer be told.
        case fileDescriptors
        /// ENOBUFS or ENOMEM: only waiting helps.
        case memory

        init?(errno code: Int32) {
            switch code {
            case EMFILE, ENFILE: self = .fileDescriptors
            case ENOBUFS, ENOMEM: self = .memory
            default: return nil
            }
        }
    }

    /// An episode of failing accepts.
    struct Episode: Equatable {
        var started: NIODeadline
        /// The errno of the failure that began it.
        var errno: Int32
        var failures: Int
        /// Waiting peers answered `overloaded` and closed.
        var refused: Int
        /// The pause taken after the latest failure.
        var pause: TimeAmount
    }

    /// What to do after a failed accept.
    struct Failure: Equatable {
        /// The first failure of an episode: log it.
        var beginsEpisode: Bool
        /// Stop accepting for this long.
        var pause: TimeAmount
    }

    /// An episode that ended, for its closing log line.
    struct Recovery: Equatable {
        var duration: TimeAmount
        var failures: Int
        var refused: Int
    }

    let initialPause: TimeAmount
    let maximumPause: TimeAmount
    private(set) var episode: Episode?

    init(initialPause: TimeAmount = .milliseconds(20), maximumPause: TimeAmount = .seconds(1)) {
        self.initialPause = initialPause
        self.maximumPause = max(initialPause, maximumPause)
    }

    mutating func acceptFailed(errno code: Int32, now: NIODeadline) -> Failure {
        guard var current = episode else {
            episode = Episode(started: now, errno: code, failures: 1, refused: 0, pause: initialPause)
            return Failure(beginsEpisode: true, pause: initialPause)
        }
        current.failures += 1
        current.pause = min(current.pause * 2, maximumPause)
        episode = current
        return Failure(beginsEpisode: false, pause: current.pause)
    }

    /// Counts peers refused during the current episode.
    mutating func refused(_ count: Int) {
        episode?.refused += count
    }

    /// A connection was accepted: ends the episode, if one was under way.
    mutating func accepted(now: NIODeadline) -> Recovery? {
        guard let ended = episode else { return nil }
        episode = nil
        return Recovery(duration: now - ended.started, failures: ended.failures, refused: ended.refused)
    }
}
