import CBOR

extension CTAPCommand {
    /// authenticatorConfig (§6.11).
    public static let config = CTAPCommand(rawValue: 0x0D)
}

extension VirtualKey.CommandHandler {
    /// authenticatorConfig, offered with the `authnrCfg` option. Its token permission, acfg,
    /// comes from the PIN with `authnrCfg`, from built-in UV with `uvAcfg`.
    static let config = VirtualKey.CommandHandler(
        .config, name: "config", isOffered: { $0.supportsAuthenticatorConfig },
        grants: { configuration, usingUV in
            let granted =
                usingUV ? configuration.options["uvAcfg"] == true : configuration.options["authnrCfg"] == true
            return granted ? .authenticatorConfiguration : []
        }
    ) { (key, parameters, _, _) async throws(VirtualKeyError) -> CBORMap? in
        try key.authenticatorConfig(parameters)
    }
}

extension VirtualKey {
    /// authenticatorConfig parameters (CTAP 2.1 §6.11).
    enum ConfigParameter {
        static let subCommand = 0x01
        static let subCommandParams = 0x02
        static let pinUvAuthProtocol = 0x03
        static let pinUvAuthParam = 0x04
    }

    /// setMinPINLength's subCommandParams (CTAP 2.1 §6.11.4).
    enum SetMinPINLengthParameter {
        static let newMinPINLength = 0x01
        static let minPinLengthRPIDs = 0x02
        static let forceChangePin = 0x03
    }

    /// authenticatorConfig subcommands (CTAP 2.1 §6.11).
    struct ConfigSubcommand: RawRepresentable, Hashable, CustomStringConvertible {
        var rawValue: UInt64
        static let enableEnterpriseAttestation = Self(rawValue: 0x01)
        static let toggleAlwaysUv = Self(rawValue: 0x02)
        static let setMinPINLength = Self(rawValue: 0x03)
        var description: String { "0x" + String(rawValue, radix: 16) }
    }

    /// Whether alwaysUv is on now (CTAP 2.1 §6.4 `alwaysUv`).
    var alwaysUVEnabled: Bool {
        configuration.supportsAlwaysUV && (state.alwaysUV ?? (configuration.options["alwaysUv"] == true))
    }

    /// Whether enterprise attestation is enabled now (CTAP 2.1 §7.1, getInfo `ep`).
    var enterpriseAttestationEnabled: Bool {
        enterpriseAttestationKey != nil
            && (state.enterpriseAttestationEnabled ?? (configuration.options["ep"] == true))
    }

    /// The minimum PIN length now: the configured one, or a larger one set by setMinPINLength.
    var currentMinPINLength: Int {
        max(state.minPINLength ?? configuration.minPINLength, configuration.minPINLength)
    }

    /// Whether `makeCredUvNotRqd` applies now: alwaysUv turns it off (CTAP 2.1 §6.11.2).
    var makeCredentialUVNotRequiredNow: Bool {
        configuration.makeCredentialUVNotRequired && !alwaysUVEnabled
    }

    /// authenticatorConfig (CTAP 2.1 §6.11). A key protected by a PIN or built-in UV, or with
    /// alwaysUv on, needs a pinUvAuthParam over 32×0xFF ‖ 0x0D ‖ subCommand ‖ subCommandParams
    /// from a token with the `acfg` permission.
    func authenticatorConfig(_ raw: ArraySlice<UInt8>) throws(VirtualKeyError) -> CBORMap? {
        typealias P = ConfigParameter
        let p = try CTAPParameters(request: raw, context: "authenticatorConfig")
        guard let rawSub = try p.unsigned(P.subCommand) else {
            throw .rejected(.missingParameter, "authenticatorConfig lacks its subCommand.")
        }
        let sub = ConfigSubcommand(rawValue: rawSub)
        let params = try p.nested(P.subCommandParams, "subCommandParams")
        let pinUvAuthProtocol = try p.unsigned(P.pinUvAuthProtocol)
        let pinUvAuthParam = try p.bytes(P.pinUvAuthParam)
        guard rawSub <= UInt64(UInt8.max) else {
            throw .rejected(.invalidSubcommand, "authenticatorConfig subcommand \(sub) is not known.")
        }
        if pinUvAuthParam != nil || isProtectedByUserVerification || alwaysUVEnabled {
            guard let pinUvAuthParam else {
                throw .rejected(.puatRequired, "authenticatorConfig needs a pinUvAuthParam on this key.")
            }
            guard pinUvAuthProtocol != nil else {
                throw .rejected(.missingParameter, "pinUvAuthParam came without pinUvAuthProtocol.")
            }
            var message = [UInt8](repeating: 0xFF, count: 32) + [CTAPCommand.config.rawValue, UInt8(rawSub)]
            if let params { message += CBOREncoder.encode(.map(params.map)) }
            try verifyPinUvAuthParam(
                pinUvAuthParam, protocol: pinUvAuthProtocol, message: message,
                permission: .authenticatorConfiguration, rpID: nil, bindsRP: false)
        }
        switch sub {
        case .enableEnterpriseAttestation where enterpriseAttestationKey != nil:
            state.enterpriseAttestationEnabled = true
            try persist()
            logger.debug("Enterprise attestation enabled")
        case .toggleAlwaysUv where configuration.supportsAlwaysUV:
            state.alwaysUV = !alwaysUVEnabled
            try persist()
            logger.debug("alwaysUv toggled", metadata: ["alwaysUv": "\(alwaysUVEnabled)"])
        case .setMinPINLength where configuration.supportsSetMinPINLength:
            try setMinPINLength(params)
        default:
            throw .rejected(.invalidSubcommand, "authenticatorConfig subcommand \(sub) is not supported.")
        }
        return nil
    }

    /// setMinPINLength (CTAP 2.1 §6.11.4): the minimum only grows; a PIN shorter than the new
    /// minimum, or forceChangePin, makes the next token wait for a PIN change.
    private func setMinPINLength(_ params: CTAPParameters?) throws(VirtualKeyError) {
        typealias P = SetMinPINLengthParameter
        let requested = try params?.unsigned(P.newMinPINLength)
        let rpItems = try params?.array(P.minPinLengthRPIDs)
        let forceChange: Bool
        if let value = params?.map[.int(P.forceChangePin)] {
            guard let flag = value.boolValue else {
                throw .rejected(.cborUnexpectedType, "forceChangePin is not a Boolean.")
            }
            forceChange = flag
        } else {
            forceChange = false
        }
        let current = currentMinPINLength
        let newLength = requested.map { Int(clamping: $0) } ?? current
        guard newLength >= current else {
            throw .rejected(
                .pinPolicyViolation, "The minimum PIN length is \(current) and cannot be lowered.")
        }
        guard newLength <= PINPolicy.maxLength else {
            throw .rejected(.pinPolicyViolation, "No PIN can be longer than \(PINPolicy.maxLength) bytes.")
        }
        // CTAP 2.2 §6.11.4: the minimum cannot pass the key's maxPINLength.
        if configuration.isCTAP22, newLength > configuration.ctap22.maxPINLength {
            throw .rejected(
                .pinPolicyViolation, "No PIN on this key can be longer than \(configuration.ctap22.maxPINLength) characters.")
        }
        var rpIDs: [String]?
        if let rpItems {
            guard rpItems.count <= configuration.maxRPIDsForSetMinPINLength else {
                throw .rejected(
                    .pinPolicyViolation,
                    "minPinLengthRPIDs names \(rpItems.count) RPs; at most \(configuration.maxRPIDsForSetMinPINLength) are accepted."
                )
            }
            var list: [String] = []
            for item in rpItems {
                guard let text = item.stringValue else {
                    throw .rejected(
                        .cborUnexpectedType, "An entry of minPinLengthRPIDs is not a text string.")
                }
                list.append(text)
            }
            rpIDs = list
        }
        if forceChange && !pinIsSet {
            throw .rejected(.pinNotSet, "forceChangePin needs a PIN to change.")
        }
        state.minPINLength = newLength
        if let rpIDs { state.minPINLengthRPIDs = rpIDs }
        // A PIN of unknown length (set by an older build) is treated as too short.
        if pinIsSet && (forceChange || (state.pinLength ?? 0) < newLength) {
            state.forcePINChange = true
        }
        try persist()
        logger.debug("Minimum PIN length set", metadata: ["minPINLength": "\(newLength)"])
    }
}
