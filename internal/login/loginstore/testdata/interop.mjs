// The vendored @botiverse/agent-session-store 0.2.0, driven by
// interop_test.go: argv[2] is the operation, argv[3] its JSON input.
// The agent environment comes from process.env, as the package reads it.
import { admitAgent, writeAgentSession, readAgentSession } from "@botiverse/agent-session-store";

const [op, arg] = process.argv.slice(2);
const input = JSON.parse(arg ?? "{}");
const admission = admitAgent(process.env);
if (op === "admit") {
  process.stdout.write(JSON.stringify({ kind: admission.kind, reason: admission.reason ?? "" }));
  process.exit(0);
}
if (admission.kind !== "agent") {
  process.stderr.write("not an agent: " + JSON.stringify(admission) + "\n");
  process.exit(3);
}
if (op === "write") {
  process.stdout.write(writeAgentSession(admission.env, input.service, input.session, input.apiBase, () => input.updatedAt));
} else if (op === "read") {
  const rec = readAgentSession(admission.env, input.service);
  // The record as read, written back the way the package writes: the
  // same bytes as the file when the reader kept every value and order.
  process.stdout.write(rec === null ? "null" : JSON.stringify(rec, null, 2) + "\n");
} else {
  process.stderr.write("unknown operation " + op + "\n");
  process.exit(2);
}
