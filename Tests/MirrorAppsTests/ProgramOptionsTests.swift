import ArgumentParser
import Foundation
import MirrorApps
import SharedBroker
import Testing
import ZeroMQ

@Suite struct ProgramOptionsTests {
  /// Z85 uses "-" (and other punctuation) as digits, so some of `broker keygen`'s keys begin with
  /// one; the flag must still take it as its value rather than as an unknown option.
  @Test func curveServerKeyMayBeginWithADash() throws {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID()).key")
    try CurveKeyPair.generate().secretKey.write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    let serverKey = try "-" + CurveKeyPair.generate().publicKey.dropFirst()

    let options = try ProgramOptions.parse(["--curve-server-key", serverKey, "--curve-key-file", file.path])
    #expect(options.curveServerKey == serverKey)
    #expect(try options.curveCredentials()?.serverPublicKey == serverKey)
  }
}
