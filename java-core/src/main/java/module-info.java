// SPDX-License-Identifier: Apache-2.0
/**
 * handoff: a weighted, strictly FIFO, starvation-free semaphore, with a Mutex and a fair RwLock
 * built on the same core. Exports {@code dev.handoff}, and {@code dev.handoff.spi} for adapters.
 */
module dev.handoff {
    requires static transitive org.jspecify; // nullness annotations, compile time only

    exports dev.handoff;
    exports dev.handoff.spi; // hooks for adapters (coroutines, reactive operators)
}
