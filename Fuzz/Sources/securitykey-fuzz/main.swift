// libFuzzer's entry point (libFuzzer provides `main`). FUZZ_TARGET names the target to run;
// every target and its properties live in the FuzzTargets module, where the regression tests
// replay them too.
import FuzzTargets

#if canImport(Glibc)
import Glibc
#endif

/// The target FUZZ_TARGET names, looked up once.
let selected: FuzzTarget = {
    let name = getenv("FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTarget.named(name) else {
        let names = FuzzTarget.all.map(\.name).joined(separator: " ")
        print("securitykey-fuzz: set FUZZ_TARGET to one of: \(names)")
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try selected.run(bytes)
    } catch {
        // A violated property: trap so libFuzzer saves the input as a crash file.
        fatalError("\(selected.name): \(error)")
    }
    return 0
}
