#if canImport(Glibc)
    import Glibc
#endif
import CBOR
import CTAP2
import FoundationEssentials
import VirtualAuthenticator

extension FuzzTarget {
    /// A virtual key's state file (`virtual serve --state FILE`, `VirtualKey(stateFile:)`): a
    /// file on disk that another process, a checked-in CI fixture or a damaged disk may have
    /// written. The input is written to a file and opened read-only under five configurations
    /// (a CTAP 2.1 key with a sensor, enterprise attestation and PIN "1234"; the same without
    /// the PIN; a PIN change demanded, without and with PIN "1234"; a CTAP 2.0 key with a fixed
    /// AAGUID), then read-write on a copy under the first, where a makeCredential makes the key
    /// save its state. Once per process: a read-only key on a missing file, a new state file,
    /// and a change that cannot be saved because the file's directory is gone.
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
        _ = newStateFileLoadsAgain
        _ = failedSaveIsReported
        for configuration in stateConfigurations {
            guard let key = try loadState(configuration, path, .readOnly) else { continue }
            let info = try runBlocking { await key.handleCBOR([0x04]) { _ in } }
            let aaguid = (try? CBORDecoder(options: .ctap2).decode(Array(info.dropFirst())))?.mapValue?[3]?.bytesValue
            try expect(info.first == 0 && aaguid == key.aaguid, "a loaded key's getInfo does not carry its AAGUID")
        }
        // Read-write on a copy: the key takes the lock, may add what its configuration needs
        // (enterprise attestation identity, PIN 1234) and saves after a makeCredential (not
        // discoverable, which needs no PIN: the signature counter changes).
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
    var forcedWithPIN = VirtualKey.Configuration.ctap21(pin: fuzzPIN)
    forcedWithPIN.forcePINChange = true
    return [
        VirtualKey.Configuration.ctap21(pin: fuzzPIN).withFingerprintSensor(sensor),
        VirtualKey.Configuration.ctap21().withFingerprintSensor(sensor),
        forced,
        forcedWithPIN,
        VirtualKey.Configuration(aaguid: [UInt8](repeating: 0x5A, count: 16)),
    ]
}()

/// A directory of this process for the state files.
private let stateScratchDirectory: String = {
    let path = FileManager.default.temporaryDirectory.path + "/securitykey-fuzz-\(getpid())-virtual-key-state"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()

/// Once per process: a read-only key on a file that does not exist is refused, not created.
private let missingReadOnlyStateIsRefused: Bool = {
    let key = try? VirtualKey(stateFile: stateScratchDirectory + "/missing.state", stateFileAccess: .readOnly)
    return key == nil
}()

/// Once per process: a read-write key on a path with no file makes a new state there, which
/// loads again.
private let newStateFileLoadsAgain: Bool = {
    let path = stateScratchDirectory + "/new.state"
    try? FileManager.default.removeItem(atPath: path)
    guard let aaguid = (try? VirtualKey(configuration: stateConfigurations[0], stateFile: path))?.aaguid else {
        return false
    }
    return (try? VirtualKey(stateFile: path, stateFileAccess: .readOnly))?.aaguid == aaguid
}()

/// Once per process: when the state file's directory is gone, a change the key cannot save is
/// refused (CTAP2_ERR_OTHER), not lost silently.
private let failedSaveIsReported: Bool = {
    let directory = stateScratchDirectory + "/vanishing"
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    guard let key = try? VirtualKey(configuration: .ctap21(), stateFile: directory + "/key.state") else { return false }
    try? FileManager.default.removeItem(atPath: directory)
    let request: CBORMap = [
        1: .byteString([UInt8](repeating: 0x22, count: 32)), 2: .map(["id": "example.org"]),
        3: .map(["id": .byteString([1])]), 4: .array([.map(["alg": -7, "type": "public-key"])]),
    ]
    let reply = try? runBlocking { await key.handleCBOR([0x01] + CBOREncoder.encode(.map(request))) { _ in } }
    return reply == [0x7F]
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
