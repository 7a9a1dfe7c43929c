import ComposableMacros
import MacroTesting
import Testing

@Suite(.macros(["ViewAction": ViewActionMacro.self]))
struct ViewActionMacroTests {
  @Test func aViewWithAStoreSendsViewActions() {
    assertMacro {
      """
      @ViewAction(for: Login.self)
      struct LoginView {
        let store: StoreOf<Login>
      }
      """
    } expansion: {
      """
      struct LoginView {
        let store: StoreOf<Login>
      }

      extension LoginView: Composable.ViewActionSending {
      }
      """
    }
  }

  @Test func aViewWithoutAStoreIsAnError() {
    assertMacro {
      """
      @ViewAction(for: Login.self)
      struct LoginView {
        let model: StoreOf<Login>
      }
      """
    } diagnostics: {
      """
      @ViewAction(for: Login.self)
      ┬───────────────────────────
      ╰─ 🛑 '@ViewAction' requires LoginView to have a 'store' property of type 'Store'
      struct LoginView {
        let model: StoreOf<Login>
      }
      """
    }
  }
}
