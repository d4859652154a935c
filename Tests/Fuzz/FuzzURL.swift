// libFuzzer entry point of the `url` fuzz target. The invariants are
// FuzzTarget.url in Tests/MediatorProtocolTests/FuzzRegressionTests.swift,
// shared with `swift test`; Tests/Fuzz/run-fuzz.sh builds and runs this.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    fuzzOne(.url, data, size)
}
