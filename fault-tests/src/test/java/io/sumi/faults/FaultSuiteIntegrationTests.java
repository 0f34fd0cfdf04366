package io.sumi.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.faults.driver.FaultDriver;
import io.sumi.faults.driver.FaultReport;
import io.sumi.faults.driver.FaultScenario;
import org.junit.jupiter.api.Test;

/**
 * The process-level fault suite: application JVMs, a broker JVM and a private PostgreSQL cluster,
 * killed and restarted while orders flow ({@code sumi.faults.scale}: {@code short} in every build,
 * {@code full} with {@code -Pfaults-full}). The negative control runs the same faults against the
 * same listeners without Sumi and must show doubles: otherwise the faults are too gentle to prove
 * anything.
 */
class FaultSuiteIntegrationTests {

    private static final String SCALE = System.getProperty("sumi.faults.scale", "short");
    private static final long SEED = Long.getLong("sumi.faults.seed", System.currentTimeMillis());

    @Test
    void withoutSumiTheSameFaultsDoubleShipmentsOrCharges() {
        FaultReport control =
                new FaultDriver(FaultScenario.of(SCALE, false, SEED), FaultDriver.defaultBuildDir()).run();
        System.out.println(control.summaryLine());
        assertThat(control.orders()).as(control.summaryLine()).isEqualTo(control.expectedOrders());
        assertThat(control.doubles())
                .as("the faults must double effects when nothing guards them: " + control.summaryLine())
                .isPositive();
        assertThat(control.passed()).as(control.summaryLine()).isFalse();
    }

    @Test
    void withSumiNothingIsLostAndNothingDoubledUnderKillsAndRestarts() {
        FaultReport guarded = new FaultDriver(FaultScenario.of(SCALE, true, SEED), FaultDriver.defaultBuildDir()).run();
        System.out.println(guarded.summaryLine());
        assertThat(guarded.passed()).as(guarded.summaryLine()).isTrue();
        assertThat(guarded.kills())
                .isEqualTo(FaultScenario.of(SCALE, true, SEED).kills());
        assertThat(guarded.postgresRestarts()).isEqualTo(1);
        assertThat(guarded.brokerRestarts()).isEqualTo(1);
    }
}
