package io.sumi.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.faults.driver.FaultDriver;
import io.sumi.faults.driver.FaultReport;
import io.sumi.faults.driver.FaultScenario;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The process-level fault suite: application JVMs, a broker JVM and a private PostgreSQL cluster,
 * killed and restarted while orders flow ({@code sumi.faults.scale}: {@code ci} in every build,
 * {@code short}, or {@code full} with {@code -Pfaults-full}; docs/fault-suite.md, "Scales"). The
 * negative control runs the same kinds of faults against the same listeners without Sumi and must
 * show doubles: otherwise the faults are too gentle to prove anything.
 *
 * <p>The RabbitMQ mode runs the same application on {@code @RabbitListener}s: a private RabbitMQ
 * node, one quorum queue per consumer (explicit {@code x-delivery-limit}, a dead-letter
 * exchange), the outbox publishing to RabbitMQ and the driver publishing some messages twice; a
 * graceful broker restart (and, in the full version, a crash of the Erlang VM) beside the kills.
 * Its negative control must double or lose orders.
 *
 * <p>The CDC mode runs the Kafka application with the outbox streamed from a replication slot of
 * the private cluster ({@code wal_level=logical}): one instance streams, the others take over
 * when it is killed (every other kill hits it), polling is the safety net. Its negative control
 * keeps Sumi's listeners and replaces the CDC path with one that confirms each batch before the
 * broker's acknowledgement: it must lose orders, rows marked dispatched that the topic never got.
 *
 * <p>The three modes run concurrently (src/test/resources/junit-platform.properties): nothing is
 * shared between their runs but the machine. Within a mode the lock keeps its two runs in turn.
 */
@Execution(ExecutionMode.CONCURRENT)
class FaultSuiteIntegrationTests {

    private static final String KAFKA_MODE = "fault-suite-kafka";
    private static final String RABBIT_MODE = "fault-suite-rabbit";
    private static final String CDC_MODE = "fault-suite-cdc";

    // ci (every build's), short, full (-Pfaults-full) or tiny. At ci the guarded Kafka run, the
    // listener path most applications take, is the short one (3,000 orders, 4 kills); its negative
    // control and the RabbitMQ pair are tiny (one kill, a PostgreSQL restart and a broker restart,
    // the RabbitMQ pair also a broker crash, and 18 injected duplicate messages that its control
    // must double): the three modes run side by side and the longest pair sets the suite's time,
    // which at short was 384 s of CI's 35 minutes, 260-270 s so. -Dsumi.faults.scale=short runs
    // every pair at short.
    private static final String SCALE = System.getProperty("sumi.faults.scale", "ci");
    private static final String KAFKA_GUARDED_SCALE = SCALE.equals("ci") ? "short" : SCALE;
    private static final String OTHER_SCALE = SCALE.equals("ci") ? "tiny" : SCALE;
    // The CDC mode's short run costs about 300 s of CI's time for the pair (a slower drain: the
    // streamer's take-over and polling's 5 s delay); every build runs it at tiny scale, which still
    // kills the streamer once and restarts PostgreSQL and the broker. -Dsumi.faults.cdc-scale=short
    // runs the short one; -Pfaults-full runs the full one.
    private static final String CDC_SCALE =
            SCALE.equals("full") ? "full" : System.getProperty("sumi.faults.cdc-scale", "tiny");
    private static final long SEED = Long.getLong("sumi.faults.seed", System.currentTimeMillis());

    @Test
    @ResourceLock(KAFKA_MODE)
    void withoutSumiTheSameFaultsDoubleShipmentsOrCharges() {
        FaultScenario scenario = FaultScenario.of(OTHER_SCALE, false, SEED);
        FaultReport control = new FaultDriver(scenario, FaultDriver.defaultBuildDir()).run();
        System.out.println(control.summaryLine());
        assertThat(control.orders()).as(control.summaryLine()).isEqualTo(control.expectedOrders());
        assertThat(control.duplicatesInjected()).as(control.summaryLine()).isEqualTo(scenario.injectedDuplicates());
        assertThat(control.doubles())
                .as("the faults must double effects when nothing guards them: " + control.summaryLine())
                .isPositive();
        assertThat(control.passed()).as(control.summaryLine()).isFalse();
    }

    @Test
    @ResourceLock(KAFKA_MODE)
    void withSumiNothingIsLostAndNothingDoubledUnderKillsAndRestarts() {
        FaultReport guarded =
                new FaultDriver(FaultScenario.of(KAFKA_GUARDED_SCALE, true, SEED), FaultDriver.defaultBuildDir()).run();
        System.out.println(guarded.summaryLine());
        assertThat(guarded.passed()).as(guarded.summaryLine()).isTrue();
        assertThat(guarded.kills())
                .isEqualTo(FaultScenario.of(KAFKA_GUARDED_SCALE, true, SEED).kills());
        assertThat(guarded.postgresRestarts()).isEqualTo(1);
        assertThat(guarded.brokerRestarts()).isEqualTo(1);
    }

    @Test
    @ResourceLock(RABBIT_MODE)
    void rabbitWithoutSumiTheSameFaultsDoubleOrLoseOrders() {
        FaultScenario scenario = FaultScenario.of("rabbit", OTHER_SCALE, false, SEED);
        FaultReport control = new FaultDriver(scenario, FaultDriver.defaultBuildDir()).run();
        System.out.println(control.summaryLine());
        assertThat(control.orders()).as(control.summaryLine()).isEqualTo(control.expectedOrders());
        assertThat(control.doubles() + control.losses())
                .as("the faults must double or lose effects when nothing guards them: " + control.summaryLine())
                .isPositive();
        assertThat(control.passed()).as(control.summaryLine()).isFalse();
    }

    @Test
    @ResourceLock(RABBIT_MODE)
    void rabbitWithSumiNothingIsLostNothingDoubledAndNothingDeadLetteredUnderKillsAndBrokerRestarts() {
        FaultScenario scenario = FaultScenario.of("rabbit", OTHER_SCALE, true, SEED);
        FaultReport guarded = new FaultDriver(scenario, FaultDriver.defaultBuildDir()).run();
        System.out.println(guarded.summaryLine());
        assertThat(guarded.passed()).as(guarded.summaryLine()).isTrue();
        assertThat(guarded.kills()).isEqualTo(scenario.kills());
        assertThat(guarded.postgresRestarts()).isEqualTo(1);
        assertThat(guarded.brokerRestarts()).isEqualTo(scenario.brokerFaults());
        assertThat(guarded.duplicatesInjected()).isEqualTo(scenario.injectedDuplicates());
    }

    @Test
    @ResourceLock(CDC_MODE)
    void cdcThatConfirmsBeforeTheBrokerAckLosesOrdersUnderTheSameFaults() {
        FaultScenario scenario = FaultScenario.cdc(CDC_SCALE, true, SEED);
        FaultReport control = new FaultDriver(scenario, FaultDriver.defaultBuildDir()).run();
        System.out.println(control.summaryLine());
        assertThat(control.orders()).as(control.summaryLine()).isEqualTo(control.expectedOrders());
        assertThat(control.unpublished())
                .as("rows confirmed before the ack must be lost under these faults: " + control.summaryLine())
                .isPositive();
        assertThat(control.losses()).as(control.summaryLine()).isPositive();
        assertThat(control.passed()).as(control.summaryLine()).isFalse();
    }

    @Test
    @ResourceLock(CDC_MODE)
    void cdcLosesNothingAndDoublesNothingUnderKillsOfTheStreamerAndRestarts() {
        FaultScenario scenario = FaultScenario.cdc(CDC_SCALE, false, SEED);
        FaultReport guarded = new FaultDriver(scenario, FaultDriver.defaultBuildDir()).run();
        System.out.println(guarded.summaryLine());
        assertThat(guarded.passed()).as(guarded.summaryLine()).isTrue();
        assertThat(guarded.kills()).isEqualTo(scenario.kills());
        assertThat(guarded.postgresRestarts()).isEqualTo(1);
        assertThat(guarded.brokerRestarts()).isEqualTo(1);
        // A tenth, not more: at tiny scale the kills, the PostgreSQL restart and the broker crash
        // cover most of the 15 s of load, and what they interrupt goes through the safety net; how
        // much that is depends on where the faults fall on a loaded machine (CI runs: 463, 878 and
        // 210 of 900 from the log; a quarter failed the last). What this guards against is a CDC
        // path that sends nothing, with the safety net doing all the work: 0.
        assertThat(guarded.cdcSent())
                .as("rows must have come from the log, not only from the safety net: " + guarded.summaryLine())
                .isGreaterThan(guarded.expectedOrders() / 10);
    }
}
