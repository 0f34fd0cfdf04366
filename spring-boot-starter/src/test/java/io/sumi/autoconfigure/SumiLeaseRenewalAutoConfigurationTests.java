package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code sumi.consumer.lease}, {@code sumi.consumer.lease-renewal} and {@code sumi.consumer.max-run}
 * reach the executor the starter builds: a handler that runs four times its lease keeps its claim
 * while renewal is on, loses it when renewal is off, and past the max run time.
 */
class SumiLeaseRenewalAutoConfigurationTests {

    /**
     * The lease of the long handler. A renewal every third of it must reach the ledger before the
     * lease ends (on the database's clock, which a test cannot hold still), so the slack, two thirds
     * of a lease, must cover a renewal thread's scheduling and the renewal pool's start on its first
     * renewal on a loaded machine: with 300 ms (200 ms of slack) a competing claim once won while
     * renewal was on. Time in the test is still counted in renewals, not slept through.
     */
    static final Duration LEASE = Duration.ofSeconds(1);

    @Configuration(proxyBeanMethods = false)
    static class Meters {
        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    private static ApplicationContextRunner runner() {
        return H2Context.runner("sumi_renewal")
                .withConfiguration(AutoConfigurations.of(SumiAutoConfiguration.class))
                .withUserConfiguration(Meters.class);
    }

    /**
     * Runs a lease-mode handler that another instance keeps claiming the key of, every 20 ms, until
     * it gets it or the handler's claim has been renewed six times (two leases, so well past the
     * lease it was claimed with; time is measured in renewals, not slept through): what did the
     * last competing claim get?
     */
    private static ClaimOutcome competingClaimWhileALongHandlerRuns(AssertableApplicationContext context)
            throws Exception {
        IdempotentExecutor executor = context.getBean(IdempotentExecutor.class);
        ProcessedMessageStore store = context.getBean(ProcessedMessageStore.class);
        MeterRegistry meters = context.getBean(MeterRegistry.class);
        HandlerDefinition handler = HandlerDefinition.builder("renewal")
                .mode(IdempotencyMode.LEASE)
                .lease(LEASE)
                .build();
        AtomicReference<ClaimOutcome> seen = new AtomicReference<>();
        try {
            executor.execute(
                    handler,
                    InboundMessage.of("payload", Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, "k")),
                    () -> {
                        await().atMost(LEASE.multipliedBy(20))
                                .pollInterval(Duration.ofMillis(20))
                                .until(() -> {
                                    boolean renewedPastTheLease = renewed(meters) >= 6;
                                    seen.set(store.claim("renewal", new ClaimRequest("k", null), LEASE)
                                            .outcome());
                                    return seen.get() == ClaimOutcome.CLAIMED || renewedPastTheLease;
                                });
                        return null;
                    });
        } catch (MessageBusyException lost) {
            // Taken over by the claim above, which never completes: the slow run is not acked.
            assertThat(seen.get()).isEqualTo(ClaimOutcome.CLAIMED);
        }
        return seen.get();
    }

    private static double renewed(MeterRegistry meters) {
        Counter counter = meters.find("sumi.leases.renewals")
                .tag("consumer", "renewal")
                .tag("result", "renewed")
                .counter();
        return counter == null ? 0 : counter.count();
    }

    @Test
    void theDefaultsAreAShortLeaseRenewedUpToFifteenMinutes() {
        runner().run(context -> {
            SumiProperties.Consumer consumer =
                    context.getBean(SumiProperties.class).consumer();
            assertThat(consumer.lease()).isEqualTo(Duration.ofSeconds(30)).isEqualTo(HandlerDefinition.DEFAULT_LEASE);
            assertThat(consumer.leaseRenewal()).isTrue();
            assertThat(consumer.maxRun())
                    .isEqualTo(Duration.ofMinutes(15))
                    .isEqualTo(HandlerDefinition.DEFAULT_MAX_RUN);

            assertThat(competingClaimWhileALongHandlerRuns(context)).isEqualTo(ClaimOutcome.BUSY);
            assertThat(context.getBean(MeterRegistry.class)
                            .get("sumi.leases.renewals")
                            .tag("result", "renewed")
                            .counter()
                            .count())
                    .isGreaterThanOrEqualTo(3);
        });
    }

    @Test
    void renewalCanBeTurnedOff() {
        runner().withPropertyValues("sumi.consumer.lease-renewal=false").run(context -> {
            assertThat(competingClaimWhileALongHandlerRuns(context)).isEqualTo(ClaimOutcome.CLAIMED);
        });
    }

    @Test
    void pastTheConfiguredMaxRunTheLeaseLapsesAndIsCounted() {
        runner().withPropertyValues("sumi.consumer.max-run=400ms").run(context -> {
            assertThat(competingClaimWhileALongHandlerRuns(context)).isEqualTo(ClaimOutcome.CLAIMED);
            assertThat(context.getBean(MeterRegistry.class)
                            .get("sumi.leases.overruns")
                            .counter()
                            .count())
                    .isEqualTo(1);
        });
    }

    // ---------------------------------------------------------------- the renewal pool (issue 19 A14)

    @Test
    void renewalsTakeConnectionsOfASmallPoolOfTheirOwnConfiguredAsTheApplicationsByDefault() {
        runner().run(context -> {
            HikariDataSource application = context.getBean(HikariDataSource.class);
            DataSource renewals = context.getBean(LeaseRenewalPool.class).dataSource();
            assertThat(renewals).isInstanceOf(HikariDataSource.class).isNotSameAs(application);
            HikariDataSource pool = (HikariDataSource) renewals;
            assertThat(pool.getJdbcUrl()).isEqualTo(application.getJdbcUrl());
            assertThat(pool.getUsername()).isEqualTo(application.getUsername());
            assertThat(pool.getPoolName()).isEqualTo(application.getPoolName() + "-sumi-renewal");
            assertThat(pool.getMaximumPoolSize()).isEqualTo(2);
            assertThat(pool.getMinimumIdle()).isZero();
            assertThat(pool.getConnectionTimeout())
                    .as("a sixth of the 30 s lease")
                    .isEqualTo(Duration.ofSeconds(5).toMillis());
            assertThat(competingClaimWhileALongHandlerRuns(context)).isEqualTo(ClaimOutcome.BUSY);
            assertThat(pool.getHikariPoolMXBean().getTotalConnections())
                    .as("the renewals took their connection from it")
                    .isPositive();
        });
    }

    @Test
    void theRenewalPoolIsSizedAndBoundedByItsProperties() {
        runner().withPropertyValues(
                        "sumi.consumer.renewal-pool.size=1", "sumi.consumer.renewal-pool.connection-timeout=2s")
                .run(context -> {
                    HikariDataSource pool = (HikariDataSource)
                            context.getBean(LeaseRenewalPool.class).dataSource();
                    assertThat(pool.getMaximumPoolSize()).isEqualTo(1);
                    assertThat(pool.getConnectionTimeout()).isEqualTo(2000);
                });
    }

    @Test
    void aRenewalPoolOfSizeZeroLeavesRenewalsOnTheLedgersDataSource() {
        runner().withPropertyValues("sumi.consumer.renewal-pool.size=0").run(context -> {
            assertThat(context.getBean(LeaseRenewalPool.class).dataSource()).isNull();
            assertThat(competingClaimWhileALongHandlerRuns(context)).isEqualTo(ClaimOutcome.BUSY);
        });
    }

    @Test
    void aRenewalConnectionTimeoutNotShorterThanTheLeaseFailsStartUp() {
        runner().withPropertyValues("sumi.consumer.lease=2s", "sumi.consumer.renewal-pool.connection-timeout=2s")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining("must be shorter than sumi.consumer.lease"));
    }

    @Test
    void anApplicationsOwnLedgerGetsNoRenewalPool() {
        runner().withUserConfiguration(OwnLedger.class)
                .run(context -> assertThat(context).doesNotHaveBean(LeaseRenewalPool.class));
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnLedger {
        @Bean
        ProcessedMessageStore ownLedger(DataSource dataSource) {
            return JdbcProcessedMessageStore.builder(dataSource).build();
        }
    }
}
