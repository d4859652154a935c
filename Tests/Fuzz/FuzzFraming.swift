// libFuzzer entry point of the `framing` fuzz target. The invariants are
// FuzzTarget.framing in Tests/MediatorProtocolTests/FuzzRegressionTests.swift,
// shared with `swift test`; Tests/Fuzz/run-fuzz.sh builds and runs this.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    fuzzOne(.framing, data, size)
}
