// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * One read of the whole cluster queue (every live generation's children, oldest generation first)
 * and the grant rule applied to it. Pure: no ZooKeeper calls, so the rule is tested on its own.
 *
 * <p>The rule: valid requests are ordered by (generation, sequence); request k is granted exactly
 * when the weights of the valid requests up to and including k sum to at most the capacity.
 * Fail-closed: a generation holding a child that looks like a request but does not parse, a
 * negative sequence (the counter wrapped), two children with one sequence (the counter saturated),
 * or a seal that does not parse is <em>poisoned</em>: no request of it or of a later generation is
 * granted while such a child is there (their weights still count), and an alarm names it.
 */
final class QueueSnapshot {

    /** Request node names: optional Curator protection prefix, then req-w&lt;weight&gt;-&lt;sequence&gt;. */
    private static final Pattern REQUEST = Pattern.compile("req-w(\\d{19})-(-?\\d{1,11})$");

    private static final Pattern SEAL = Pattern.compile("^seal-(-?\\d{1,11})$");
    static final String REQUEST_MARK = "req-w";

    /** A valid request, in queue order. */
    static final class Entry {
        final long generation;
        final String name;
        final long weight;
        final long sequence;
        /** The weights up to and including this one fit the capacity, and nothing before it is poisoned. */
        boolean granted;
        /** A poisoned generation at or before this one: not granted whatever the weights. */
        boolean blocked;
        /** Position in the queue (0 = first). */
        int index;

        Entry(long generation, String name, long weight, long sequence) {
            this.generation = generation;
            this.name = name;
            this.weight = weight;
            this.sequence = sequence;
        }
    }

    /** One generation's children as read. */
    static final class Generation {
        final long number;
        final List<String> children;

        Generation(long number, List<String> children) {
            this.number = number;
            this.children = children;
        }
    }

    final long capacity;
    /** Valid requests in queue order. */
    final List<Entry> order = new ArrayList<>();

    final Map<String, Entry> byName = new HashMap<>();
    /**
     * Request children whose owner must withdraw them and ask again in the newest generation:
     * unparsable, negative or duplicate sequences, and requests created after their generation's seal.
     */
    final Set<String> misplaced = new HashSet<>();
    /** Children that keep a generation poisoned, with the reason; watched until they go. */
    final Map<String, String> poison = new HashMap<>();
    /** The generation of each poisoning child. */
    final Map<String, Long> poisonGeneration = new HashMap<>();
    /** Per generation: the children count (what one read returns), by generation number. */
    final Map<Long, Integer> sizes = new HashMap<>();
    /** Generations older than the newest that hold no request any more (to delete). */
    final List<Long> drained = new ArrayList<>();
    /** The newest generation, and whether it must be sealed now (its counter is past the switch point, or it is poisoned). */
    final long newest;

    final boolean newestNeedsSwitch;
    final boolean newestSealed;

    private QueueSnapshot(long capacity, long newest, boolean newestNeedsSwitch, boolean newestSealed) {
        this.capacity = capacity;
        this.newest = newest;
        this.newestNeedsSwitch = newestNeedsSwitch;
        this.newestSealed = newestSealed;
    }

    /** A request child's weight and sequence, or null if the name is not a well-formed request. */
    static long @Nullable [] parseRequest(String name) {
        Matcher m = REQUEST.matcher(name);
        if (!m.find()) {
            return null;
        }
        long sequence = Long.parseLong(m.group(2));
        if (sequence < 0 || sequence > Integer.MAX_VALUE) {
            return null;
        }
        return new long[] {Long.parseLong(m.group(1)), sequence};
    }

    static boolean looksLikeRequest(String name) {
        return name.contains(REQUEST_MARK);
    }

    /**
     * Applies the rule to generations read oldest first (the last one is the newest).
     *
     * @param switchAt the sequence from which the newest generation must be sealed
     */
    static QueueSnapshot of(List<Generation> generations, long capacity, long switchAt) {
        Generation last = generations.get(generations.size() - 1);
        boolean[] newestFlags = new boolean[2];
        List<Object[]> perGeneration = new ArrayList<>();
        for (Generation g : generations) {
            perGeneration.add(scan(g, g == last, switchAt, newestFlags));
        }
        QueueSnapshot s = new QueueSnapshot(capacity, last.number, newestFlags[0], newestFlags[1]);
        long before = 0; // saturated at capacity + 1
        boolean blocked = false;
        for (int i = 0; i < generations.size(); i++) {
            Generation g = generations.get(i);
            Object[] scanned = perGeneration.get(i);
            @SuppressWarnings("unchecked")
            List<Entry> requests = (List<Entry>) scanned[0];
            @SuppressWarnings("unchecked")
            Map<String, String> problems = (Map<String, String>) scanned[1];
            long seal = (Long) scanned[2];
            @SuppressWarnings("unchecked")
            Set<String> misplaced = (Set<String>) scanned[3];
            s.sizes.put(g.number, g.children.size());
            s.misplaced.addAll(misplaced);
            boolean holdsRequests =
                    !requests.isEmpty() || problems.keySet().stream().anyMatch(QueueSnapshot::looksLikeRequest);
            if (!problems.isEmpty() && holdsRequests) {
                blocked = true;
                s.poison.putAll(problems);
                for (String child : problems.keySet()) {
                    s.poisonGeneration.put(child, g.number);
                }
            }
            if (g != last && !holdsRequests) {
                s.drained.add(g.number);
            }
            for (Entry e : requests) {
                if (e.sequence > seal) {
                    s.misplaced.add(e.name); // created after the seal: void, never counted
                    continue;
                }
                e.blocked = blocked;
                before = Math.min(before + e.weight, capacity + 1);
                e.granted = !blocked && before <= capacity;
                e.index = s.order.size();
                s.order.add(e);
                s.byName.put(e.name, e);
            }
        }
        return s;
    }

    /** Returns {requests sorted, problems, seal, misplaced}. */
    private static Object[] scan(Generation g, boolean newest, long switchAt, boolean[] newestFlags) {
        List<Entry> requests = new ArrayList<>();
        Map<String, String> problems = new HashMap<>();
        Set<String> misplaced = new HashSet<>();
        Map<Long, List<String>> bySequence = new HashMap<>();
        long seal = Long.MAX_VALUE;
        boolean sealed = false;
        long maxSequence = -1;
        for (String child : g.children) {
            Matcher sm = SEAL.matcher(child);
            if (sm.find()) {
                sealed = true;
                long seq = Long.parseLong(sm.group(1));
                if (seq < 0 || seq > Integer.MAX_VALUE) {
                    problems.put(child, "a seal with a sequence out of range (the generation's counter wrapped)");
                    seal = -1;
                } else {
                    seal = Math.min(seal, seq);
                    bySequence.computeIfAbsent(seq, k -> new ArrayList<>()).add(child);
                }
                continue;
            }
            if (!looksLikeRequest(child)) {
                continue; // not ours: ignored
            }
            long[] parsed = parseRequest(child);
            if (parsed == null) {
                problems.put(
                        child,
                        "a request whose sequence does not parse or is negative (the generation's counter wrapped)");
                misplaced.add(child);
                continue;
            }
            maxSequence = Math.max(maxSequence, parsed[1]);
            requests.add(new Entry(g.number, child, parsed[0], parsed[1]));
            bySequence.computeIfAbsent(parsed[1], k -> new ArrayList<>()).add(child);
        }
        for (List<String> same : bySequence.values()) {
            if (same.size() > 1) {
                for (String name : same) {
                    problems.put(
                            name,
                            "a sequence shared by " + same.size() + " children " + same
                                    + " (the generation's counter saturated)");
                    if (looksLikeRequest(name)) {
                        misplaced.add(name);
                    }
                }
            }
        }
        requests.sort((a, b) -> Long.compare(a.sequence, b.sequence));
        if (newest) {
            newestFlags[0] = !sealed && (maxSequence >= switchAt || !problems.isEmpty());
            newestFlags[1] = sealed;
        }
        return new Object[] {requests, Collections.unmodifiableMap(problems), seal, misplaced};
    }
}
