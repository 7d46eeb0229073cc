import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import Transport

/// `securitykey reset`: erases every credential and the PIN (CTAP 2.1 §6.6), with care.
struct ResetCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Reset the key: erase every credential and the PIN (asks first).",
        discussion: """
            Keys accept a reset only within about 10 seconds of being plugged in (or of a card \
            being put on the reader), so that software cannot wipe a key that merely sits in a \
            port. When the key refuses because that moment has passed, you are asked to remove \
            it and insert it again; the reset is then sent to the same key (same USB node or \
            reader, same AAGUID) as soon as it is back, and never to another one. Keys that want \
            a long touch for reset (longTouchForReset) or a reset over some transports only \
            (transportsForReset, CTAP 2.2) say so, and that guidance is printed before the \
            question. With --json: {device, reset, reinserted}.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Do not ask for confirmation (for scripts).")
    var yes = false
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        let interaction = CLIInteraction(reader: PINReader(fromStandardInput: true))
        try await withAuthenticator(global, explaining: interaction) { key, deadline, directory in
            try await key.checkResetTransport()
            let info = await key.info
            if info.longTouchForReset == true || info.transportsForReset != nil {
                Console.err("To reset this key: \(info.resetGuidance).")
            }
            try await Confirmation.ask(about: key, assumeYes: yes, deadline: deadline) {
                "Reset \($0)? Every credential on it and its PIN are erased; this cannot be undone."
            }
            let after = try await directory.reset(key, interaction: interaction, deadline: deadline)
            let reinserted = after !== key
            if reinserted { await after.close() }
            Console.result(
                json: wantsJSON,
                .members([("device", .string(after.uri)), ("reset", .bool(true)), ("reinserted", .bool(reinserted))]),
                "The key at \(after.uri) is reset: it holds no credentials and no PIN.")
        }
    }
}
