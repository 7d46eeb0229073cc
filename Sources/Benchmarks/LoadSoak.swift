import Authenticators
import Foundation
import Logging
import SecurityKeys
import Transport
import VirtualAuthenticator

/// `securitykey-bench soak [--ceremonies N] [--samples S]`: N WebAuthn ceremonies in this
/// process, through the provider API (`SecurityKeyAuthorizationController`) on one virtual key
/// behind an `InProcessConnection`, with this process's RSS and open fds sampled S times.
///
/// The key is a ctap21 profile with a PIN. Ceremonies go in threes: a registration and a sign-in
/// with user verification discouraged, then a sign-in with it required (a PIN token through the
/// interaction). Credentials are not discoverable, so the key's own state does not grow: what
/// grows with N is a leak. Prints the samples, the RSS slope over the second half (past warm-up)
/// and over all, and latency per ceremony.
enum SoakCommand {
    static let pin = "123456"
    static let relyingParty = "soak.example"

    /// The PIN, and no account choice (the sign-ins name their credential).
    struct Interaction: SecurityKeyInteraction {
        func pin(deviceURI: String, attemptsLeft: Int?) async -> String? { SoakCommand.pin }
        func chooseAccount(_ accounts: [SecurityKeyAccount]) async -> Int? { nil }
    }

    /// One sample: ceremonies done, resident set in KiB, open file descriptors.
    struct Sample {
        var ceremonies: Int
        var residentKilobytes: Int
        var openFiles: Int
    }

    static func run(_ arguments: [String]) async -> Int32 {
        var count = 100_000
        var sampleCount = 20
        var index = 0
        while index < arguments.count {
            let value = index + 1 < arguments.count ? Int(arguments[index + 1]) : nil
            switch arguments[index] {
            case "--ceremonies" where value.map({ $0 >= 3 && $0 <= 10_000_000 }) == true: count = value ?? count
            case "--samples" where value.map({ $0 >= 2 && $0 <= 1000 }) == true: sampleCount = value ?? sampleCount
            default:
                StandardStreams.err(
                    "securitykey-bench: soak takes --ceremonies N (3 to 10000000) and --samples S (2 to 1000)")
                return 2
            }
            index += 2
        }
        do {
            return try await soak(count: count, sampleCount: sampleCount)
        } catch {
            StandardStreams.err("securitykey-bench: soak: \(error)")
            return 1
        }
    }

    static func soak(count: Int, sampleCount: Int) async throws -> Int32 {
        var settings = VirtualKeySettings()
        settings.profile = .ctap21
        settings.pin = pin
        let logger = Logger(label: "securitykey.bench.soak")
        let key = try VirtualKey(configuration: settings.configuration, userPresence: .approve)
        let authenticator = try await Authenticator.open(
            InProcessConnection(handler: key, uri: "inprocess:soak"), deadline: .after(.seconds(10)))
        let controller = SecurityKeyAuthorizationController(
            sources: [.authenticator(authenticator)], interaction: Interaction(), logger: logger)
        let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: relyingParty)
        let pinRetriesBefore = try await authenticator.pinRetries(deadline: .after(.seconds(10))).retries

        var samples = [Sample(ceremonies: 0, residentKilobytes: ProcessFootprint.residentKilobytes(),
                              openFiles: ProcessFootprint.openFiles())]
        let every = max(1, count / sampleCount)
        var latencies: [UInt64] = []
        latencies.reserveCapacity(count)
        var credential: [UInt8] = []
        var failures = 0
        var firstFailure: String?
        let clock = ContinuousClock()
        let started = clock.now
        for ceremony in 0..<count {
            let challenge = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let start = clock.now
            do throws(SecurityKeyError) {
                switch ceremony % 3 {
                case 0:
                    var request = provider.createCredentialRegistrationRequest(
                        challenge: challenge, displayName: "Soak", name: "soak",
                        userID: Array("soak-user-\(ceremony % 1000)".utf8))
                    request.userVerificationPreference = .discouraged
                    credential = try await controller.performRegistration(request).credentialID
                default:
                    var request = provider.createCredentialAssertionRequest(challenge: challenge)
                    request.allowedCredentials = [SecurityKeyCredentialDescriptor(credentialID: credential)]
                    request.userVerificationPreference = ceremony % 3 == 1 ? .discouraged : .required
                    let assertion = try await controller.performAssertion(request)
                    if assertion.credentialID != credential {
                        failures += 1
                        firstFailure = firstFailure ?? "ceremony \(ceremony) signed with another credential"
                    }
                }
            } catch {
                failures += 1
                firstFailure = firstFailure ?? "ceremony \(ceremony): \(error.message)"
            }
            latencies.append(start.duration(to: clock.now).nanoseconds)
            if (ceremony + 1) % every == 0 || ceremony + 1 == count {
                samples.append(
                    Sample(
                        ceremonies: ceremony + 1, residentKilobytes: ProcessFootprint.residentKilobytes(),
                        openFiles: ProcessFootprint.openFiles()))
            }
        }
        let wall = Double(started.duration(to: clock.now).nanoseconds) / 1e9
        let pinRetriesAfter = try await authenticator.pinRetries(deadline: .after(.seconds(10))).retries
        await authenticator.close()

        StandardStreams.out(
            "Soak: \(count) ceremonies in this process through SecurityKeyAuthorizationController on one virtual key "
                + "(InProcessConnection, ctap21, PIN set): registration, sign-in, sign-in with the PIN, in turn")
        StandardStreams.out("ceremonies  RSS        open fds")
        for sample in samples {
            StandardStreams.out(
                "\(Figures.pad(String(sample.ceremonies), 10))  "
                    + "\(Figures.pad(Figures.fixed(Double(sample.residentKilobytes) / 1024, decimals: 1) + " MiB", 9))  "
                    + "\(sample.openFiles)")
        }
        let secondHalf = Array(samples.dropFirst(samples.count / 2))
        let slopeAll = slope(samples) * 10_000
        let slopeLate = slope(secondHalf) * 10_000
        let residents = secondHalf.map(\.residentKilobytes)
        StandardStreams.out(
            "RSS slope, KiB per 10,000 ceremonies: second half \(Figures.fixed(slopeLate, decimals: 2)), "
                + "all samples \(Figures.fixed(slopeAll, decimals: 2)); second half spans "
                + "\(Figures.fixed(Double((residents.max() ?? 0) - (residents.min() ?? 0)) / 1024, decimals: 2)) MiB")
        let files = Set(samples.map(\.openFiles))
        StandardStreams.out(
            "open fds: \(files.count == 1 ? "constant at \(samples[0].openFiles)" : "varied: \(files.sorted())")")
        var sorted = latencies.sorted()
        if sorted.isEmpty { sorted = [0] }
        func rank(_ percent: Int) -> Double { Double(sorted[max((percent * sorted.count + 99) / 100, 1) - 1]) }
        StandardStreams.out(
            "\(Figures.fixed(Double(count) / wall, decimals: 0)) ceremonies/s over \(Figures.fixed(wall, decimals: 1)) s; "
                + "per ceremony p50 \(Figures.milliseconds(rank(50))) p99 \(Figures.milliseconds(rank(99))) "
                + "max \(Figures.milliseconds(Double(sorted.last ?? 0)))")
        StandardStreams.out(
            "failed ceremonies: \(failures)\(firstFailure.map { " (first: \($0))" } ?? ""); "
                + "PIN retries \(pinRetriesBefore) -> \(pinRetriesAfter)")
        return failures == 0 && files.count == 1 && pinRetriesAfter == pinRetriesBefore ? 0 : 1
    }

    /// Least-squares slope of RSS (KiB) over ceremonies.
    static func slope(_ samples: [Sample]) -> Double {
        guard samples.count >= 2 else { return 0 }
        let n = Double(samples.count)
        let meanX = samples.map { Double($0.ceremonies) }.reduce(0, +) / n
        let meanY = samples.map { Double($0.residentKilobytes) }.reduce(0, +) / n
        var numerator = 0.0
        var denominator = 0.0
        for sample in samples {
            let dx = Double(sample.ceremonies) - meanX
            numerator += dx * (Double(sample.residentKilobytes) - meanY)
            denominator += dx * dx
        }
        return denominator == 0 ? 0 : numerator / denominator
    }
}

/// This process's resident set and open descriptors, from /proc/self.
enum ProcessFootprint {
    /// `VmRSS` of /proc/self/status in KiB (0 when unreadable).
    static func residentKilobytes() -> Int {
        statusKilobytes("VmRSS", path: "/proc/self/status") ?? 0
    }

    /// A KiB member (`VmRSS`, `VmHWM`) of a /proc/PID/status file.
    static func statusKilobytes(_ member: String, path: String) -> Int? {
        guard let status = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(member + ":") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }

    /// The entries of /proc/self/fd, less the one the listing itself opens.
    static func openFiles() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 0
        return max(entries - 1, 0)
    }
}
