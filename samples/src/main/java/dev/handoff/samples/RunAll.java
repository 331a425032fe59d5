// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

/**
 * Runs every sample in turn; each prints what it demonstrates and the figures that prove it.
 *
 * <pre>
 * mvn -B -q -pl samples -am install -DskipTests &amp;&amp; mvn -B -q -pl samples exec:java
 * </pre>
 */
public final class RunAll {

    private RunAll() {
    }

    /**
     * Runs every sample.
     *
     * @param args ignored
     * @throws Exception if interrupted, or if the in-process ZooKeeper of sample 7 or 8 cannot start
     */
    public static void main(String[] args) throws Exception {
        System.out.println("handoff samples (JDK " + Runtime.version().feature() + ")");
        System.out.println();
        MemoryBudgetSample.main(args);
        System.out.println();
        CallbackSample.main(args);
        System.out.println();
        VirtualThreadsSample.main(args);
        System.out.println();
        WithPermitsSample.main(args);
        System.out.println();
        RwLockCacheSample.main(args);
        System.out.println();
        AdaptiveLimitSample.main(args);
        System.out.println();
        ClusterBudgetSample.main(args);
        System.out.println();
        FencingSample.main(args);
        System.out.println();
        ReactorSample.main(args);
        System.out.println();
        ObservabilitySample.main(args);
        System.out.println();
        LocksSample.main(args);
        System.out.println();
        KotlinxMigrationSample.main(args);
        System.out.println();
        AdaptiveCapacitySample.main(args);
        System.out.println();
        FairShareSample.main(args);
    }
}
