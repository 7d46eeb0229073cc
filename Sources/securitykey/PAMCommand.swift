import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import FoundationEssentials
import Glibc
import PAMSecurityKey

/// `securitykey pam enroll`.
struct PAMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pam", abstract: "Enrol a key for login and sudo (pam_securitykey.so and pam_u2f.so).",
        subcommands: [PAMEnrollCommand.self])
}

/// `securitykey pam enroll`: pamu2fcfg's job, for both PAM modules.
struct PAMEnrollCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll", abstract: "Make a credential and print the line pam-u2f's file takes for it.",
        discussion: """
            Prints USER:KEYHANDLE,PUBLICKEY,TYPE,ATTRIBUTES, the line pam_u2f.so and \
            pam_securitykey.so both read (as pamu2fcfg prints it). With --append the credential is \
            added to the user's file (~/.config/Yubico/u2f_keys, or --file), after asking: to the \
            user's line when there is one, since both modules read a user's last line only. \
            With --json: {user, origin, line, file, appended}.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(name: .long, help: "The user the line is for (default: you).")
    var user: String?
    @Option(name: .long, help: ArgumentHelp("The origin (relying-party ID); default pam://HOSTNAME, pam-u2f's.", valueName: "pam://host"))
    var origin: String?
    @Flag(name: .long, help: "Ask for the PIN on every authentication (+pin).")
    var pin = false
    @Flag(name: .long, help: "Ask for user verification (PIN or built-in) on every authentication (+verification).")
    var verification = false
    @Flag(name: .long, help: "Make a resident (discoverable) credential, listed as *.")
    var resident = false
    @Option(name: .long, help: ArgumentHelp("The key type: es256, eddsa or rs256.", valueName: "type"))
    var type = "es256"
    @Flag(name: .long, help: "Add the credential to the user's file instead of printing the line.")
    var append = false
    @Option(name: .long, help: ArgumentHelp("The file --append writes (default ~/.config/Yubico/u2f_keys).", valueName: "path"))
    var file: String?
    @Flag(name: .long, help: "Do not ask before appending (for scripts).")
    var yes = false
    @Flag(name: .long, help: "Read the PIN from standard input instead of the terminal.")
    var pinStdin = false
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        guard let algorithm = PAMEnrollment.algorithm(typeName: type) else {
            throw CLIError.usage("--type must be es256, eddsa or rs256.")
        }
        let userName = user ?? ProcessInfo.processInfo.userName
        guard PAMEnrollment.isValidUser(userName) else {
            throw CLIError.usage("The user name must be non-empty and hold no ':' or line break.")
        }
        let relyingParty = origin ?? "pam://\(PAMSystem.hostName() ?? ProcessInfo.processInfo.hostName)"
        var enrollment = PAMEnrollment(user: userName, origin: relyingParty)
        enrollment.requiresPIN = pin
        enrollment.requiresVerification = verification
        enrollment.resident = resident
        enrollment.algorithm = algorithm
        let interaction = CLIInteraction(reader: PINReader(fromStandardInput: pinStdin))
        let credential = try await withAuthenticator(global) { key, deadline in
            if !wantsJSON { Console.err("Touch the security key to make the credential.") }
            do { return try await enrollment.enroll(on: key, interaction: interaction, deadline: deadline) } catch {
                throw interaction.explain(error)
            }
        }
        let line = AuthorizationFile.line(user: userName, credentials: [credential])
        var written: String?
        if append {
            let path = file ?? AuthorizationFile.defaultPath(for: userName)
            do {
                try AuthorizationFile.append(credential, for: userName, at: path) {
                    try Confirmation.ask("Add this credential for \(userName) to \(path)?", assumeYes: yes)
                }
            } catch let error as PAMFailure {
                throw CLIError.invalidInput("\(path) is not a pam-u2f file this command may change: \(error.message).")
            }
            written = path
        }
        if wantsJSON {
            Console.json(
                .members([
                    ("user", .string(userName)), ("origin", .string(relyingParty)), ("line", .string(line)),
                    ("file", written.map(JSONValue.string) ?? .null), ("appended", .bool(written != nil)),
                ]))
        } else if let written {
            Console.out("Added the credential for \(userName) to \(written).")
        } else {
            Console.out(line)
        }
    }
}
