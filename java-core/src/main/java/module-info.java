// SPDX-License-Identifier: Apache-2.0
/**
 * handoff: a weighted, strictly FIFO, starvation-free semaphore, with a Mutex and a fair RwLock
 * built on the same core. Exports only {@code dev.handoff}.
 */
module dev.handoff {
    requires static transitive org.jspecify; // nullness annotations, compile time only
    exports dev.handoff;
}
