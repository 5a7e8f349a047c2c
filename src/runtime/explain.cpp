// PreparedProgram::explain(): a readable account of every decision prepare
// made (docs/runtime.md, "Observability and determinism"). Formatting
// happens on demand only.
#include <fmt/format.h>

#include "runtime/scheduled_graph.h"

namespace tenferro::runtime::internal {
namespace {

std::string slot_name(const PreparedState& st, std::uint32_t s) {
  const SlotInfo& slot = st.slots[s];
  std::string out = fmt::format("s{}:{}{}", s, slot.dtype, shape_to_string(slot.shape));
  if (slot.input != kNoIndex) out += fmt::format("=input{}", slot.input);
  if (slot.buffer != kNoIndex) out += fmt::format("@b{}", slot.buffer);
  return out;
}

std::string engine_name(const PreparedState& st, std::uint32_t e) {
  const EngineEntry& engine = *st.engines[e];
  return fmt::format("engine {} ('{}')", engine.id(), engine.metadata().name);
}

}  // namespace

std::string explain_prepared(const PreparedState& st) {
  std::string out = fmt::format("prepared program {} for runtime {} at configuration epoch {}\n",
                                st.program->fingerprint().hex().substr(0, 16), st.runtime, st.epoch);
  out += fmt::format("  specialization: {}\n", st.signature.to_string());
  out += fmt::format("  determinism: {}; placement option: {}\n", to_string(st.determinism),
                     st.options.placement.to_string());
  for (const std::string& note : st.notes) out += fmt::format("  placement: {}\n", note);
  out += fmt::format("  event domains (drain order):");
  for (const DomainUse& d : st.domains) out += fmt::format(" {} of {};", d.id, engine_name(st, d.engine));
  out += "\n  nodes:\n";
  for (std::size_t i = 0; i < st.nodes.size(); ++i) {
    const NodeRecord& n = st.nodes[i];
    out += fmt::format("    #{} {} {}", i, to_string(n.kind), n.name);
    if (n.kind == ScheduledNodeKind::kTransfer) {
      out += fmt::format(" from {} to {}", engine_name(st, n.source_engine), engine_name(st, n.engine));
    } else {
      out += fmt::format(" on {} domain {}", engine_name(st, n.engine), n.placement.domain);
    }
    out += fmt::format(" via {}\n", n.provider_name);
    std::string ins;
    for (std::uint32_t s : n.inputs) ins += (ins.empty() ? "" : ", ") + slot_name(st, s);
    std::string outs;
    for (std::uint32_t s : n.outputs) outs += (outs.empty() ? "" : ", ") + slot_name(st, s);
    out += fmt::format("        ({}) -> ({})", ins, outs);
    if (!n.deps.empty()) out += fmt::format(" after [#{}]", fmt::join(n.deps, ", #"));
    out += "\n";
    if (!n.reason.empty()) out += fmt::format("        why: {}\n", n.reason);
    if (n.group_end > i + 1) {
      out += fmt::format("        concurrent group: #{}..#{} may run at the same time (work estimates", i,
                         n.group_end - 1);
      for (std::size_t k = i; k < n.group_end; ++k) out += fmt::format(" {:.3g}", st.nodes[k].work);
      out += " flops)\n";
    }
    if (n.in_place_ok && !n.outputs.empty() && !n.inputs.empty() &&
        st.slots[n.outputs[0]].buffer == st.slots[n.inputs[0]].buffer && st.slots[n.inputs[0]].buffer != kNoIndex)
      out += "        in place: the result reuses operand 0's buffer\n";
    if (n.donate_input != kNoIndex)
      out += fmt::format("        donation: may take over donatable input s{} at run time\n", n.donate_input);
    if (n.scratch_buffer != kNoIndex)
      out += fmt::format("        scratch: {} bytes in b{}\n", n.scratch_bytes, n.scratch_buffer);
    if (!n.resources.empty()) {
      std::string res;
      for (const ResourceAmount& r : n.resources)
        res += fmt::format("{}{}={}", res.empty() ? "" : ", ", r.key.to_string(), r.amount);
      out += fmt::format("        leases: {}\n", res);
    }
    if (n.provenance != nullptr)
      out += fmt::format("        provenance: {}\n", program::describe_provenance(n.provenance));
  }
  out += "  buffers:\n";
  for (std::size_t b = 0; b < st.buffers.size(); ++b) {
    const BufferInfo& buffer = st.buffers[b];
    std::string occupants;
    for (std::uint32_t o : buffer.occupants) {
      occupants += occupants.empty() ? "" : ", ";
      occupants +=
          (o & kScratchOccupant) != 0 ? fmt::format("scratch of #{}", o & ~kScratchOccupant) : fmt::format("s{}", o);
    }
    out += fmt::format("    b{}: {} bytes on {} ({}{}) live #{}..#{}; holds {}\n", b, buffer.bytes,
                       engine_name(st, buffer.engine),
                       buffer.per_run ? "allocated per run: escapes as output" : "run workspace, reused across runs",
                       buffer.scratch ? ", scratch" : "", buffer.first_node, buffer.last_node, occupants);
  }
  out += "  outputs:";
  for (std::uint32_t s : st.output_slots) out += " " + slot_name(st, s);
  out += fmt::format("\n  peak memory estimate: {} bytes ({} in run workspaces)\n", st.peak_bytes, st.workspace_bytes);
  for (const ResourceAmount& r : st.admission)
    out += fmt::format("  run admission: {} = {}\n", r.key.to_string(), r.amount);
  return out;
}

}  // namespace tenferro::runtime::internal
