// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import java.util.List;

/**
 * Runs every sample in turn, in the order of their numbers; each prints what it demonstrates and
 * the figures that prove it.
 *
 * <pre>
 * mvn -B -q -pl samples -am install -DskipTests &amp;&amp; mvn -B -q -pl samples exec:java
 * </pre>
 */
public final class RunAll {

    /** A sample's {@code main}. */
    private interface Sample {
        void main(String[] args) throws Exception;
    }

    private static final List<Sample> SAMPLES = List.of(
            MemoryBudgetSample::main, //  1-5: futures and callbacks
            NoStarvationSample::main,
            CallbackSample::main,
            CallbackTimeoutSample::main,
            CallbackShutdownSample::main,
            VirtualThreadsSample::main, //  6-9: blocking, coroutines, an RwLock
            WithPermitsSample::main,
            CoroutineCancellationSample::main,
            RwLockCacheSample::main,
            LoadSheddingSample::main, // 10-12: capacity control
            AdaptiveLimitSample::main,
            AdaptiveCapacitySample::main,
            ClusterBudgetSample::main, // 13-15: across a cluster, through ZooKeeper
            CrashedReplicaSample::main,
            FencingSample::main,
            ReactorSample::main, // 16-20: integrations, locks, migration, fair share
            ObservabilitySample::main,
            LocksSample::main,
            KotlinxMigrationSample::main,
            FairShareSample::main,
            GrpcNoisyTenantSample::main, // 21: admission control at a gRPC server
            KtorTenantsSample::main, // 22: admission control at a Ktor server
            ServletAdmissionSample::main); // 23: admission control over HTTP

    private RunAll() {}

    /**
     * Runs every sample.
     *
     * @param args ignored
     * @throws Exception if interrupted, or if the in-process ZooKeeper of samples 13 to 15 cannot start
     */
    public static void main(String[] args) throws Exception {
        System.out.println("handoff samples (JDK " + Runtime.version().feature() + ")");
        for (Sample sample : SAMPLES) {
            System.out.println();
            sample.main(args);
        }
    }
}
