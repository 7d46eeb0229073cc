extension AuthenticatorInfo {
    /// Lines that say what getInfo means, for people (`securitykey info`): versions, AAGUID,
    /// extensions, transports, algorithms, discoverable credentials, PIN and built-in UV, limits,
    /// firmware, free slots and the other options.
    public var summaryLines: [String] {
        var lines: [String] = []
        lines.append("Versions:        \(versions.map(\.rawValue).joined(separator: ", "))")
        lines.append("AAGUID:          \(aaguid.description.lowercased())")
        if !extensions.isEmpty {
            lines.append("Extensions:      \(extensions.map(\.rawValue).joined(separator: ", "))")
        }
        if !transports.isEmpty { lines.append("Transports:      \(transports.joined(separator: ", "))") }
        if !algorithms.isEmpty {
            lines.append("Algorithms:      \(algorithms.map { "\($0.algorithm)" }.joined(separator: ", "))")
        }
        lines.append("Discoverable:    \(isEnabled(.residentKey) ? "yes" : "no") (resident keys)")
        let pin: String
        switch options[.clientPIN] {
        case .some(true): pin = "set"
        case .some(false): pin = "supported, not set"
        case .none: pin = "not supported"
        }
        lines.append("PIN:             \(pin)")
        let uv: String
        switch options[.userVerification] {
        case .some(true): uv = "built in, configured"
        case .some(false): uv = "built in, not configured"
        case .none: uv = "none built in"
        }
        lines.append("User verif.:     \(uv)")
        if let maxMsgSize { lines.append("Max message:     \(maxMsgSize) bytes") }
        if !pinUVAuthProtocols.isEmpty {
            lines.append("PIN/UV protocols: \(pinUVAuthProtocols.map(String.init).joined(separator: ", "))")
        }
        if let minPINLength { lines.append("Min PIN length:  \(minPINLength)") }
        if let maxPINLength { lines.append("Max PIN length:  \(maxPINLength)") }
        if let pinComplexityPolicy { lines.append("PIN complexity:  \(pinComplexityPolicy ? "enforced" : "not enforced")") }
        if let uvCountSinceLastPINEntry {
            lines.append("UV since PIN:    \(uvCountSinceLastPINEntry) built-in verification(s) since the PIN was last entered")
        }
        if longTouchForReset == true || transportsForReset != nil { lines.append("Reset:           \(resetGuidance)") }
        if forcePINChange == true { lines.append("The PIN must be changed before the key can be used.") }
        if let firmwareVersion { lines.append("Firmware:        \(firmwareVersion)") }
        if let remaining = remainingDiscoverableCredentials {
            lines.append("Free slots:      \(remaining) discoverable credential(s)")
        }
        let other = options.filter { ![.residentKey, .clientPIN, .userVerification].contains($0.key) }.sorted { $0.key < $1.key }
        if !other.isEmpty {
            lines.append("Options:         \(other.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))")
        }
        return lines
    }

    /// What `pin status` adds about the key's PIN rules (CTAP 2.2 maxPINLength,
    /// pinComplexityPolicy) and built-in verifications since the PIN was last entered.
    public var pinRuleLines: [String] {
        var lines: [String] = []
        if let maxPINLength {
            lines.append("A PIN has \(minPINLength ?? 4) to \(maxPINLength) characters.")
        }
        if pinComplexityPolicy == true {
            let url = pinComplexityPolicyURL.flatMap { String(validating: $0, as: UTF8.self) }
            lines.append(
                "The key enforces a PIN complexity policy" + (url.map { " (\($0))" } ?? "")
                    + ": easily guessed PINs are refused.")
        }
        if let count = uvCountSinceLastPINEntry {
            lines.append("\(count) built-in user verification(s) since the PIN was last entered.")
        }
        return lines
    }

    /// How a reset must be done, from longTouchForReset and transportsForReset (CTAP 2.2 §6.4):
    /// "touch and hold" for a long touch, the transports it works over.
    public var resetGuidance: String {
        var text = longTouchForReset == true ? "touch and hold the key for several seconds" : "touch the key"
        if let transports = transportsForReset, !transports.isEmpty {
            text += ", connected over \(transports.map(Self.transportName).joined(separator: " or ")) only"
        }
        return text
    }

    /// A transport as people name it.
    static func transportName(_ transport: String) -> String {
        switch transport {
        case "usb": "USB"
        case "nfc": "NFC"
        case "ble": "Bluetooth"
        default: transport
        }
    }
}
