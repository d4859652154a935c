/// How the daemon re-execs itself, given by its launcher.
package struct ReexecSettings: Sendable {
    package var image: ReexecImage
    /// Told before the exec (systemd: `RELOADING=1`) and when it failed
    /// (`READY=1` again); the new image says it is ready as at any start.
    package var announce: @Sendable (ReexecAnnouncement) -> Void
    /// Test hook: the broker's snapshot is stamped with this version, so
    /// that the successor cannot read it and falls back to a clean restart.
    package var snapshotVersion: Int64?

    package init(
        image: ReexecImage, announce: @escaping @Sendable (ReexecAnnouncement) -> Void = { _ in },
        snapshotVersion: Int64? = nil
    ) {
        self.image = image
        self.announce = announce
        self.snapshotVersion = snapshotVersion
    }
}

package enum ReexecAnnouncement: Sendable, Equatable {
    /// The hand-over begins; the exec follows.
    case starting
    /// The exec did not happen; this image carries on. Why.
    case failed(String)
}

/// A re-exec asked for and not done yet.
struct PendingReexec {
    /// `mediator/reexec` calls to answer with its outcome.
    var requesters: [HostHandOverState.Requester]
    /// Held calls the snapshot cannot carry (with descriptors, from the
    /// bridge, re-registration's): the hand-over waits for them until this
    /// time, then goes without them (they are answered).
    var waitUntil: ContinuousClock.Instant
}
