import CBOR
import CTAP2
import Foundation
import VirtualAuthenticator

extension FuzzTarget {
    /// A virtual key's state file (`virtual serve --state FILE`, `VirtualKey(stateFile:)`): a
    /// file on disk that another process, a checked-in CI fixture or a damaged disk may have
    /// written. The input is written to a file and opened read-only under four configurations
    /// (a CTAP 2.1 key with a sensor and enterprise attestation; the same with PIN "1234"; one
    /// demanding a PIN change; a CTAP 2.0 key with a fixed AAGUID), then read-write on a copy,
    /// where a makeCredential makes the key save its state.
    ///
    /// Properties: a file either loads or is refused with a state-file error (never a trap);
    /// what loads answers getInfo with its AAGUID; what a key saved after loading loads again,
    /// with the same AAGUID (the decoder reads everything the encoder writes).
    static let virtualKeyState = FuzzTarget("virtual-key-state", "virtual key state file loading") {
        bytes throws(FuzzPropertyViolation) in
        let path = stateScratchDirectory + "/input.state"
        let copy = stateScratchDirectory + "/copy.state"
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw FuzzPropertyViolation(description: "the state file cannot be written")
        }
        _ = missingReadOnlyStateIsRefused
        for configuration in stateConfigurations {
            guard let key = try loadState(configuration, path, .readOnly) else { continue }
            let info = try runBlocking { await key.handleCBOR([0x04]) { _ in } }
            let aaguid = (try? CBORDecoder(options: .ctap2).decode(Array(info.dropFirst())))?.mapValue?[3]?.bytesValue
            try expect(info.first == 0 && aaguid == key.aaguid, "a loaded key's getInfo does not carry its AAGUID")
        }
        // Read-write on a copy: the key takes the lock, may add what its configuration needs
        // (enterprise attestation identity, PIN) and saves after a makeCredential.
        try? FileManager.default.removeItem(atPath: copy)
        guard FileManager.default.createFile(atPath: copy, contents: Data(bytes)),
            let key = try loadState(stateConfigurations[0], copy, .readWrite)
        else { return }
        let aaguid = key.aaguid
        let request: CBORMap = [
            1: .byteString([UInt8](repeating: 0x22, count: 32)),
            2: .map(["id": "example.org"]),
            3: .map(["id": .byteString([1, 2, 3, 4]), "name": "fuzz"]),
            4: .array([.map(["alg": -7, "type": "public-key"])]),
            7: .map(["rk": true]),
        ]
        _ = try runBlocking { await key.handleCBOR([0x01] + CBOREncoder.encode(.map(request))) { _ in } }
        let reloaded = try loadState(stateConfigurations[0], copy, .readOnly)
        try expect(reloaded?.aaguid == aaguid, "a state file the key saved does not load again the same")
    }
}

/// The configurations a state file is loaded under.
private let stateConfigurations: [VirtualKey.Configuration] = {
    let sensor = VirtualKey.FingerprintSensor(captureTimeout: .milliseconds(20))
    var forced = VirtualKey.Configuration.ctap21()
    forced.forcePINChange = true
    return [
        VirtualKey.Configuration.ctap21().withFingerprintSensor(sensor),
        VirtualKey.Configuration.ctap21(pin: fuzzPIN).withFingerprintSensor(sensor),
        forced,
        VirtualKey.Configuration(aaguid: [UInt8](repeating: 0x5A, count: 16)),
    ]
}()

/// A directory of this process for the state files.
private let stateScratchDirectory: String = {
    let path = NSTemporaryDirectory() + "securitykey-fuzz-\(getpid())-virtual-key-state"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()

/// Once per process: a read-only key on a file that does not exist is refused, not created.
private let missingReadOnlyStateIsRefused: Bool = {
    let key = try? VirtualKey(stateFile: stateScratchDirectory + "/missing.state", stateFileAccess: .readOnly)
    return key == nil
}()

/// The key loaded from `path`, or nil when the file was refused with a state-file error.
private func loadState(
    _ configuration: VirtualKey.Configuration, _ path: String, _ access: VirtualKey.StateFileAccess
) throws(FuzzPropertyViolation) -> VirtualKey? {
    do {
        return try VirtualKey(configuration: configuration, stateFile: path, stateFileAccess: access)
    } catch {
        let refusals: [VirtualKeyError.Code] = [.stateFileForeign, .stateFileCorrupt, .stateFileVersion, .stateMismatch]
        try expect(
            refusals.contains(error.code),
            "a state file refused with \(error.code), not a state-file error: \(error.message)")
        return nil
    }
}
