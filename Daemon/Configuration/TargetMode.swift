/// How a target's instances share it, as `register` and a manifest's
/// `mode` say: one connection serves it (`exclusive`), or several do and
/// calls are spread among them (`pool`).
package enum TargetMode: String, Sendable, CaseIterable { case exclusive, pool }
