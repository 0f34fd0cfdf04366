package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.autoconfigure.actuate.SumiBudgetsHealthIndicator;
import io.sumi.autoconfigure.actuate.SumiEndpoint;
import io.sumi.autoconfigure.actuate.SumiLedgerHealthIndicator;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetExhaustedException;
import io.sumi.budget.BudgetRegistry;
import io.sumi.budget.SpendStore;
import io.sumi.budget.jdbc.JdbcSpendStore;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.redis.RedisSpendStore;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * An application whose only shared store is Redis ({@code sumi.ledger.store=redis}, no DataSource),
 * on the machine's Redis (127.0.0.1:6379, which {@code .ci/run} starts): its fleet budgets share
 * their spend in Redis, and its operator's side works: {@code sumiLedger} reports Redis's
 * reachability ({@code UP}; {@code DOWN} on a port nothing listens on), {@code sumiBudgets} its
 * budgets, and the {@code sumi} endpoint the ledger through the store and its writes through the
 * SPI. One context per case, without Kafka: each starts in well under a second.
 */
class SumiRedisOnlyApplicationTests {

    /** Keys of this run only, deleted after. */
    static final String RUN = UUID.randomUUID().toString().substring(0, 8);

    static final String LEDGER_PREFIX = "sumi-starter-test:ledger:" + RUN;
    static final String BUDGET_PREFIX = "sumi-starter-test:budget:" + RUN;

    private static ApplicationContextRunner redisOnly() {
        return new ApplicationContextRunner()
                .withPropertyValues(
                        "spring.data.redis.host=127.0.0.1",
                        "spring.data.redis.port=6379",
                        "sumi.ledger.store=redis",
                        "sumi.ledger.redis.prefix=" + LEDGER_PREFIX,
                        "sumi.budgets.store.prefix=" + BUDGET_PREFIX,
                        "sumi.budgets.paid.limit=5",
                        "sumi.budgets.paid.window=30d",
                        "management.endpoints.web.exposure.include=health,sumi")
                .withConfiguration(AutoConfigurations.of(
                        DataRedisAutoConfiguration.class,
                        SumiRedisLedgerAutoConfiguration.class,
                        SumiAutoConfiguration.class,
                        SumiRedisSpendStoreAutoConfiguration.class,
                        SumiBudgetAutoConfiguration.class,
                        SumiActuatorAutoConfiguration.class));
    }

    @AfterAll
    static void deleteTheRunsKeys() {
        redisOnly().run(context -> {
            try (RedisConnection connection =
                    context.getBean(RedisConnectionFactory.class).getConnection()) {
                for (String prefix : Set.of(LEDGER_PREFIX, BUDGET_PREFIX)) {
                    Set<byte[]> keys = connection.keyCommands().keys((prefix + ":*").getBytes());
                    if (keys != null) {
                        keys.forEach(key -> connection.keyCommands().del(key));
                    }
                }
            }
        });
    }

    @Test
    void fleetBudgetsKeepTheirSpendInRedisBesideTheLedger() {
        redisOnly().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(SpendStore.class)).isInstanceOf(RedisSpendStore.class);
            Budget paid = context.getBean(BudgetRegistry.class).budget("paid");
            for (int i = 0; i < 5; i++) {
                paid.acquire().onSuccess();
            }
            assertThatThrownBy(paid::acquire).isInstanceOf(BudgetExhaustedException.class);
            // Another instance's store on the same Redis sees the fleet's spend.
            RedisSpendStore other = RedisSpendStore.builder(context.getBean(RedisConnectionFactory.class))
                    .prefix(BUDGET_PREFIX)
                    .build();
            assertThat(other.readCurrent("paid", Duration.ofDays(30).toMillis()).state())
                    .isEqualTo(new SpendStore.WindowState(5, 5));
        });
    }

    @Test
    void theBudgetsStoreCanBeChosenApartFromTheLedgers() {
        H2Context.onH2(redisOnly(), "sumi_budget_store")
                .withPropertyValues("sumi.budgets.store.type=jdbc")
                .run(context -> assertThat(context.getBean(SpendStore.class)).isInstanceOf(JdbcSpendStore.class));
        redisOnly()
                .withPropertyValues("sumi.ledger.store=jdbc", "sumi.budgets.store.type=redis")
                .run(context -> assertThat(context.getBean(SpendStore.class)).isInstanceOf(RedisSpendStore.class));
    }

    @Test
    void healthAndTheEndpointWorkWithoutADataSource() {
        redisOnly().run(context -> {
            assertThat(context).hasNotFailed();
            Health ledger = context.getBean(SumiLedgerHealthIndicator.class).health();
            assertThat(ledger.getStatus()).isEqualTo(Status.UP);
            assertThat(ledger.getDetails()).containsEntry("store", "redis").containsEntry("heldForReconciliation", 0L);
            assertThat(context.getBean(SumiBudgetsHealthIndicator.class)
                            .health()
                            .getDetails())
                    .containsKey("paid");

            // A claim left behind, seen by the endpoint through the store and released through the SPI.
            ProcessedMessageStore store = context.getBean(ProcessedMessageStore.class);
            String consumer = "redis-only-" + RUN;
            store.claim(consumer, new ClaimRequest("m1", null), Duration.ofMinutes(5));
            SumiEndpoint endpoint = context.getBean(SumiEndpoint.class);
            assertThat(endpoint.summary()).containsKeys("ledger", "budgets").doesNotContainKey("outbox");
            @SuppressWarnings("unchecked")
            Map<String, Object> consumers = (Map<String, Object>)
                    ((Map<String, Object>) endpoint.section("ledger", null, null, null, null)).get("consumers");
            assertThat(consumers).containsKey(consumer);
            assertThatThrownBy(() -> endpoint.section("claims", null, null, null, null))
                    .isInstanceOf(InvalidEndpointRequestException.class)
                    .hasMessageContaining("sumi.ledger.store=redis");
            Map<String, Object> released = endpoint.write(
                    "claims", "release", SecurityContext.NONE, consumer, "m1", null, null, null, null, null);
            assertThat(released).containsEntry("changed", true);
            assertThat(store.claim(consumer, new ClaimRequest("m1", null), Duration.ofMinutes(5))
                            .outcome())
                    .as("released: the next delivery takes it")
                    .isEqualTo(ClaimOutcome.CLAIMED);
            store.release(store.find(consumer, "m1").orElseThrow(), null);
        });
    }

    @Test
    void theLedgersHealthIsDownWhenRedisDoesNotAnswer() throws IOException {
        int nothingListening;
        try (ServerSocket socket = new ServerSocket(0)) {
            nothingListening = socket.getLocalPort();
        }
        redisOnly()
                .withPropertyValues("spring.data.redis.port=" + nothingListening, "spring.data.redis.timeout=2s")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Health ledger =
                            context.getBean(SumiLedgerHealthIndicator.class).health();
                    assertThat(ledger.getStatus()).isEqualTo(Status.DOWN);
                    assertThat(ledger.getDetails())
                            .containsEntry("store", "redis")
                            .containsKey("error");
                });
    }
}
