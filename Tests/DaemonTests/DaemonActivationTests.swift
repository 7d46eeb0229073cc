import Foundation
import Testing

/// The system bus files as installed: a private dbus-daemon configured like the system bus
/// (nobody may own a name or call a method unless a policy says so) that includes
/// dbus/org.securitykey.Daemon1.conf and activates from dbus/system/org.securitykey.Daemon1.service
/// (its Exec pointed at the built daemon, on a UDP key). securitykeyd is started by the bus on
/// the first call and reaches it with --system (DBUS_SYSTEM_BUS_ADDRESS).
extension DaemonTests {
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    @Test func systemBusActivationAndPolicyStartAndAdmitTheDaemon() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("system-bus-\(UUID())")
        let services = directory.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = 30000 + Int(ProcessInfo.processInfo.processIdentifier % 10000) * 2 + 5
        let address = "unix:path=\(directory.path)/bus"

        // The committed service file, with only its Exec's binary moved and test flags added.
        let committed = try String(
            contentsOf: Self.repository.appendingPathComponent("dbus/system/org.securitykey.Daemon1.service"),
            encoding: .utf8)
        #expect(committed.contains("Exec=/usr/local/bin/securitykeyd --system\n"))
        #expect(committed.contains("SystemdService=securitykeyd.service"))
        let daemonPath = DaemonBed.binaries.appendingPathComponent("securitykeyd").path
        let service = committed.replacingOccurrences(
            of: "Exec=/usr/local/bin/securitykeyd --system",
            with:
                "Exec=\(daemonPath) --system --udp-only --udp 127.0.0.1:\(port) --callers same-user")
        try service.write(
            to: services.appendingPathComponent("org.securitykey.Daemon1.service"), atomically: true,
            encoding: .utf8)
        let policy = Self.repository.appendingPathComponent("dbus/org.securitykey.Daemon1.conf").path
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(services.path)</servicedir>
              <policy context="default">
                <allow user="*"/>
                <deny own="*"/>
                <deny send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_requested_reply="true" send_type="method_return"/>
                <allow send_requested_reply="true" send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
                <allow receive_type="signal"/>
                <allow send_destination="org.freedesktop.DBus"/>
              </policy>
              <include>\(policy)</include>
            </busconfig>
            """
        let configFile = directory.appendingPathComponent("system.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)

        let key = Process()
        key.executableURL = DaemonBed.binaries.appendingPathComponent("securitykey")
        key.arguments = ["virtual", "serve", "--udp", "127.0.0.1:\(port)"]
        key.standardOutput = FileHandle.nullDevice
        key.standardError = FileHandle.nullDevice
        try key.run()
        let bus = Process()
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        bus.arguments = ["--config-file=\(configFile.path)", "--nofork", "--nopidfile", "--print-address=1"]
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        bus.environment = environment
        let printed = Pipe()
        bus.standardOutput = printed
        bus.standardError = FileHandle.nullDevice
        try bus.run()
        var daemonPID: Int32?
        defer {
            if let daemonPID { kill(daemonPID, SIGTERM) }
            kill(bus.processIdentifier, SIGKILL)
            bus.waitUntilExit()
            key.terminate()
            key.waitUntilExit()
        }
        #expect(printed.fileHandleForReading.availableDataLine().hasPrefix("unix:"))

        func busctl(_ arguments: [String]) throws -> DaemonBed.Output {
            try DaemonBed.run("/usr/bin/busctl", ["--address=\(address)", "--timeout=30"] + arguments)
        }
        // The key answers before the daemon exists.
        for _ in 0..<100 {
            let info = try DaemonBed.run(
                DaemonBed.binaries.appendingPathComponent("securitykey").path,
                ["info", "--device", "udp:127.0.0.1:\(port)?local=0"])
            if info.status == 0 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        // Nobody owns the name: the first call starts the daemon, the policy lets it own the name
        // and lets the call through, and that very call answers with the key present (the daemon
        // lists the keys before it answers its first ListDevices, not an empty list).
        #expect(try busctl(["status", "org.securitykey.Daemon1"]).status != 0)
        let listed: DaemonBed.Output? = try busctl([
            "call", "org.securitykey.Daemon1", "/org/securitykey/Daemon1", "org.securitykey.Daemon1",
            "ListDevices",
        ])
        #expect(listed?.stdout.hasPrefix("aa{sv} 1 ") == true, "\(listed?.stdout ?? "") \(listed?.stderr ?? "")")
        let owner = try busctl([
            "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "GetConnectionUnixProcessID", "s", "org.securitykey.Daemon1",
        ])
        daemonPID = owner.stdout.split(separator: " ").last.flatMap {
            Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        #expect(daemonPID != nil, "\(owner.stderr)")
        #expect(listed?.stdout.contains("udp:127.0.0.1:\(port)") == true, "\(listed?.stderr ?? "")")

        // The policy admits the daemon's name only: another name is still refused.
        let other = try busctl([
            "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
            "su",
            "org.securitykey.Other", "0",
        ])
        #expect(other.status != 0)
    }
}
