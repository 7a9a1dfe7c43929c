import MirrorApps
import Testing

@Suite struct ScriptTests {
  let commands: Set<String> = ["+", "-", "prime", "reset"]

  @Test func expandsRepeatsAndWaits() throws {
    let script = try Script(parsing: "+x3, -,wait:250,prime", commands: commands)
    #expect(
      script.steps == [
        .command("+"), .command("+"), .command("+"), .command("-"),
        .wait(.milliseconds(250)), .command("prime"),
      ]
    )
  }

  @Test func rejectsWhatItDoesNotKnow() {
    for bad in ["", "+,,-", "jump", "+x0", "+x-2", "wait:soon", "wait:-5", "resetx", "+x99999999"] {
      #expect(throws: ScriptError.self, "\(bad)") { try Script(parsing: bad, commands: commands) }
    }
  }
}
