import CBOR
import Transport

extension VirtualKey {
    /// One CTAP2 command the key answers: its byte, its name, whether this key's configuration
    /// offers it, and the function that serves it.
    ///
    /// Each command area declares its handler beside its code (`Commands/<Area>/`) and is listed
    /// once in ``all``; ``VirtualKey/handleCBOR(_:keepalive:)`` looks the handler up by the
    /// command byte, so there is no central switch to edit.
    final class CommandHandler: Sendable {
        /// Serves one request: the parameters after the command byte, the command byte itself
        /// (one function may serve a command and its FIDO_2_1_PRE number) and the keepalive sink.
        typealias Handle =
            @Sendable (
                isolated VirtualKey, _ parameters: ArraySlice<UInt8>, _ command: CTAPCommand,
                _ keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
            ) async throws(VirtualKeyError) -> CBORMap?

        /// What a command continues from the request before it; every other command drops it.
        struct Continuation: OptionSet, Sendable {
            let rawValue: UInt8
            /// The assertions left for authenticatorGetNextAssertion (CTAP 2.1 §6.3).
            static let assertions = Continuation(rawValue: 1 << 0)
            /// The enumeration authenticatorCredentialManagement's getNext subcommands continue
            /// (CTAP 2.1 §6.8.3, §6.8.4).
            static let enumeration = Continuation(rawValue: 1 << 1)
        }

        /// The command byte served.
        let command: CTAPCommand
        /// The name logs show for the command.
        let name: String
        /// The pending state this command keeps; the rest is dropped before it runs.
        let continues: Continuation
        /// Whether a key with this configuration offers the command; one that does not answers
        /// CTAP1_ERR_INVALID_COMMAND.
        let isOffered: @Sendable (Configuration) -> Bool
        /// The pinUvAuthToken permissions for this command a token from the PIN (`usingUV`
        /// false) or from built-in UV may carry with this configuration (CTAP 2.1 §6.5.5.7).
        let grants: @Sendable (Configuration, _ usingUV: Bool) -> PINUVAuthPermissions
        /// Serves the request.
        let handle: Handle

        init(
            _ command: CTAPCommand, name: String, continues: Continuation = [],
            isOffered: @escaping @Sendable (Configuration) -> Bool = { _ in true },
            grants: @escaping @Sendable (Configuration, _ usingUV: Bool) -> PINUVAuthPermissions = { _, _ in
                []
            },
            handle: @escaping Handle
        ) {
            self.command = command
            self.name = name
            self.continues = continues
            self.isOffered = isOffered
            self.grants = grants
            self.handle = handle
        }

        /// Every command the virtual key knows, one entry per command byte.
        static let all: [CommandHandler] = [
            .getInfo, .makeCredential, .getAssertion, .getNextAssertion, .reset, .selection, .clientPIN,
            .credentialManagement, .credentialManagementPreview, .config, .bioEnrollment,
            .bioEnrollmentPreview,
            .largeBlobs,
        ]

        /// ``all`` indexed by command byte, so dispatch is one array read.
        private static let byCommand: [CommandHandler?] = {
            var table = [CommandHandler?](repeating: nil, count: 256)
            for handler in all {
                precondition(table[Int(handler.command.rawValue)] == nil, "two handlers for \(handler.name)")
                table[Int(handler.command.rawValue)] = handler
            }
            return table
        }()

        /// The handler registered for `command`, if any.
        static func registered(for command: CTAPCommand) -> CommandHandler? {
            byCommand[Int(command.rawValue)]
        }
    }
}
