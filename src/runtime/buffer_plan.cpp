// The buffer plan: liveness over schedule positions, buffer assignment with
// reuse of dead buffers, in-place reuse for providers that allow it, donation
// of Donatable inputs, reuse ordering edges, the peak-memory estimate and the
// run-level admission request.
//
// Note [Buffer planning]
//  - A slot is live from its producer until its last reader; a view keeps
//    its source live as long as the view is read.
//  - Memory that escapes the run (outputs and whatever they view) gets a
//    buffer of its own, allocated fresh per run (the caller keeps it).
//    Everything else lives in buffers of the reusable run workspace.
//  - A dead slot's buffer returns to its engine's free list after its last
//    reader, unless another event domain read it (a transfer source): the
//    reader's completion is not ordered with later work of this domain.
//  - Reusing a buffer makes the new writer depend on every reader of the
//    previous occupant, so out-of-order event domains stay correct.
//  - In place: when the provider allows it and operand 0 dies at this node
//    with the result's dtype and shape, the result takes over operand 0's
//    buffer. Not when another operand of the node reads that memory through
//    a view (a transpose of operand 0, say): the output would overlap that
//    operand without having its layout, which no kernel may be handed
//    (Note [Kernel alias contract]). Operand 0 repeated as it is (x * x)
//    is identical to the output and stays allowed. Comparing the operand's
//    own bytes, not its buffer's, matters: a reused buffer may be larger
//    than the value in it.
//  - Donation: a Donatable program input dying at a node whose provider
//    allows in-place writing may become that node's escaping output, when
//    at run time the storage is exclusively owned, unviewed and ready; the
//    same rule about other operands viewing it applies.
//  - Scratch is a buffer live for one node.
//  - A concurrent group counts as one step (Note [Concurrent groups]):
//    buffers its members free return to the free list after its last
//    member, and a member writes in place only over an operand no other
//    member reads.
//  - The peak estimate is the sum of all planned buffers; the admission
//    request is that sum per storage domain.
#include <algorithm>
#include <map>

#include "runtime/scheduled_graph.h"

namespace tenferro::runtime::internal {
namespace {

bool writes_buffer(ScheduledNodeKind kind) noexcept {
  return kind == ScheduledNodeKind::kOperation || kind == ScheduledNodeKind::kExtension ||
         kind == ScheduledNodeKind::kCopy || kind == ScheduledNodeKind::kTransfer ||
         kind == ScheduledNodeKind::kCollective;
}

}  // namespace

void plan_buffers(PreparedState& st) {
  const std::uint32_t count = static_cast<std::uint32_t>(st.nodes.size());
  const std::size_t num_slots = st.slots.size();
  std::vector<std::vector<std::uint32_t>> readers(num_slots);

  // Liveness and readers (through views), cross-domain reads.
  for (std::uint32_t n = 0; n < count; ++n) {
    const NodeRecord& node = st.nodes[n];
    if (node.kind == ScheduledNodeKind::kView) continue;
    for (std::uint32_t s : node.inputs) {
      for (std::uint32_t r = s; r != kNoIndex; r = st.slots[r].view_source) {
        SlotInfo& slot = st.slots[r];
        slot.last_use = std::max(slot.last_use, n);
        if (readers[r].empty() || readers[r].back() != n) readers[r].push_back(n);
        if (st.engines[node.engine] != st.engines[slot.engine] && node.kind != ScheduledNodeKind::kTransfer)
          slot.read_cross_domain = true;
        if (node.kind == ScheduledNodeKind::kTransfer && node.source_engine != node.engine)
          slot.read_cross_domain = true;
      }
    }
  }
  // Outputs live to the end and escape, with everything they view.
  for (std::uint32_t s : st.output_slots) {
    for (std::uint32_t r = s; r != kNoIndex; r = st.slots[r].view_source) {
      st.slots[r].escapes = true;
      st.slots[r].last_use = count;
    }
  }

  // The concurrent group of each node: [group_start, group_end).
  std::vector<std::uint32_t> group_start(count);
  std::vector<std::uint32_t> group_end(count);
  for (std::uint32_t n = 0; n < count;) {
    const std::uint32_t end = std::max(st.nodes[n].group_end, n + 1);
    for (std::uint32_t k = n; k < end; ++k) {
      group_start[k] = n;
      group_end[k] = end;
    }
    n = end;
  }
  auto read_by_other_member = [&](std::uint32_t slot, std::uint32_t n) {
    return std::any_of(readers[slot].begin(), readers[slot].end(),
                       [&](std::uint32_t r) { return r != n && r >= group_start[n] && r < group_end[n]; });
  };
  // True when an operand of node `n` other than operand 0 reads `slot`'s
  // memory through a view (Note [Buffer planning], in place).
  auto viewed_by_other_operand = [&](std::uint32_t slot, const NodeRecord& node) {
    for (std::size_t i = 1; i < node.inputs.size(); ++i) {
      if (node.inputs[i] == slot) continue;  // the same value: identical layout
      for (std::uint32_t r = node.inputs[i]; r != kNoIndex; r = st.slots[r].view_source)
        if (r == slot) return true;
    }
    return false;
  };

  std::map<std::uint32_t, std::vector<std::uint32_t>> free_by_engine;  // engine -> free buffers
  // Per buffer: its current (or, once free, previous) occupant: a slot, or
  // a node index for scratch.
  std::vector<std::uint32_t> occupant;
  std::vector<char> occupant_is_slot;
  std::vector<char> is_free;
  auto new_buffer = [&](std::uint32_t engine, std::size_t bytes, bool per_run, std::uint32_t n) {
    BufferInfo b;
    b.bytes = bytes;
    b.engine = engine;
    b.per_run = per_run;
    b.first_node = n;
    b.last_node = n;
    st.buffers.push_back(std::move(b));
    occupant.push_back(kNoIndex);
    occupant_is_slot.push_back(1);
    is_free.push_back(0);
    return static_cast<std::uint32_t>(st.buffers.size() - 1);
  };
  auto take_free = [&](std::uint32_t engine, std::size_t bytes) -> std::uint32_t {
    auto it = free_by_engine.find(engine);
    if (it == free_by_engine.end() || it->second.empty()) return kNoIndex;
    std::vector<std::uint32_t>& list = it->second;
    std::size_t best = list.size();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::size_t have = st.buffers[list[i]].bytes;
      if (have >= bytes && (best == list.size() || have < st.buffers[list[best]].bytes)) best = i;
    }
    if (best == list.size()) {  // none big enough: grow the largest
      best = 0;
      for (std::size_t i = 1; i < list.size(); ++i)
        if (st.buffers[list[i]].bytes > st.buffers[list[best]].bytes) best = i;
      st.buffers[list[best]].bytes = bytes;
    }
    const std::uint32_t b = list[best];
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(best));
    is_free[b] = 0;
    return b;
  };
  // The new writer of buffer `b` at node `n` waits for everything that wrote
  // or read its previous occupant in the same domain (Note [Buffer planning]).
  auto order_after_previous = [&](std::uint32_t b, std::uint32_t n) {
    const std::uint32_t prev = occupant[b];
    if (prev == kNoIndex) return;
    NodeRecord& node = st.nodes[n];
    auto add = [&](std::uint32_t d) {
      if (d == kNoIndex || d == n || st.nodes[d].engine != node.engine) return;
      if (std::find(node.deps.begin(), node.deps.end(), d) == node.deps.end()) node.deps.push_back(d);
    };
    if (!occupant_is_slot[b]) {
      add(prev);
      return;
    }
    add(st.slots[prev].storage_producer);
    for (std::uint32_t r : readers[prev]) add(r);
  };
  auto assign = [&](std::uint32_t b, std::uint32_t slot_or_node, std::uint32_t n, bool is_slot) {
    order_after_previous(b, n);
    occupant[b] = slot_or_node;
    occupant_is_slot[b] = is_slot ? 1 : 0;
    st.buffers[b].occupants.push_back(is_slot ? slot_or_node : (kScratchOccupant | slot_or_node));
    st.buffers[b].last_node = std::max(st.buffers[b].last_node, n);
    if (is_slot) {
      st.slots[slot_or_node].buffer = b;
    } else {
      st.buffers[b].scratch = true;
    }
  };

  for (std::uint32_t n = 0; n < count; ++n) {
    NodeRecord& node = st.nodes[n];
    if (writes_buffer(node.kind)) {
      // Scratch first: it is the larger, shorter-lived request, so it gets
      // the free buffer it fits best before outputs take one.
      if (node.scratch_bytes > 0) {
        std::uint32_t b = take_free(node.engine, node.scratch_bytes);
        if (b == kNoIndex) b = new_buffer(node.engine, node.scratch_bytes, false, n);
        assign(b, n, n, false);
        node.scratch_buffer = b;
      }
      for (std::size_t o = 0; o < node.outputs.size(); ++o) {
        const std::uint32_t s = node.outputs[o];
        SlotInfo& slot = st.slots[s];
        const std::size_t bytes = slot.nbytes();
        if (slot.escapes) {
          assign(new_buffer(slot.engine, bytes, true, n), s, n, true);
          if (o == 0 && node.in_place_ok && !node.inputs.empty()) {
            const SlotInfo& in = st.slots[node.inputs[0]];
            const bool donatable =
                in.input != kNoIndex && st.signature.inputs()[in.input].binding == BindingMode::kDonatable &&
                in.last_use == n && !read_by_other_member(node.inputs[0], n) &&
                !viewed_by_other_operand(node.inputs[0], node) && !in.escapes && in.nbytes() == bytes &&
                in.dtype == slot.dtype && in.shape == slot.shape &&
                st.engines[in.engine]->metadata().storage == st.engines[slot.engine]->metadata().storage;
            if (donatable) node.donate_input = node.inputs[0];
          }
          continue;
        }
        std::uint32_t b = kNoIndex;
        if (o == 0 && node.in_place_ok && !node.inputs.empty()) {
          const std::uint32_t in = node.inputs[0];
          const SlotInfo& src = st.slots[in];
          if (src.buffer != kNoIndex && src.view_source == kNoIndex && src.last_use == n && !src.escapes &&
              !src.read_cross_domain && src.engine == slot.engine && src.dtype == slot.dtype &&
              src.shape == slot.shape && occupant[src.buffer] == in && occupant_is_slot[src.buffer] &&
              !is_free[src.buffer] && !read_by_other_member(in, n) && !viewed_by_other_operand(in, node)) {
            b = src.buffer;  // in place: the operand dies here
          }
        }
        if (b == kNoIndex) b = take_free(slot.engine, bytes);
        if (b == kNoIndex) b = new_buffer(slot.engine, bytes, false, n);
        assign(b, s, n, true);
      }
    }
    // Release what died at n, and this node's scratch (at a group's last
    // member: what died anywhere in the group).
    if (n + 1 < group_end[n]) continue;
    for (std::uint32_t b = 0; b < st.buffers.size(); ++b) {
      if (st.buffers[b].per_run || is_free[b] || occupant[b] == kNoIndex) continue;
      bool dead = false;
      if (!occupant_is_slot[b]) {
        dead = occupant[b] <= n;
      } else {
        const SlotInfo& slot = st.slots[occupant[b]];
        dead = slot.last_use <= n && slot.producer <= n && !slot.read_cross_domain && !slot.escapes;
      }
      if (!dead) continue;
      free_by_engine[st.buffers[b].engine].push_back(b);
      is_free[b] = 1;
    }
  }

  // Peak estimate and the admission request per storage domain.
  std::map<std::uint64_t, std::uint64_t> per_storage;
  st.peak_bytes = 0;
  st.workspace_bytes = 0;
  for (BufferInfo& b : st.buffers) {
    b.placement = st.nodes.empty() ? ResolvedPlacement{} : ResolvedPlacement{st.engines[b.engine]->id(), 0};
    st.peak_bytes += b.bytes;
    if (!b.per_run) st.workspace_bytes += b.bytes;
    per_storage[st.engines[b.engine]->metadata().storage.value()] += b.bytes;
  }
  for (const auto& [storage, bytes] : per_storage)
    if (bytes > 0) st.admission.push_back(ResourceAmount{ResourceKey{ResourceKind::kMemoryBytes, storage}, bytes});
  // Buffer placement: the placement of the node that first writes it.
  for (const NodeRecord& n : st.nodes) {
    for (std::uint32_t s : n.outputs)
      if (st.slots[s].buffer != kNoIndex && n.kind != ScheduledNodeKind::kView)
        st.buffers[st.slots[s].buffer].placement = n.placement;
    if (n.scratch_buffer != kNoIndex) st.buffers[n.scratch_buffer].placement = n.placement;
  }
}

}  // namespace tenferro::runtime::internal
