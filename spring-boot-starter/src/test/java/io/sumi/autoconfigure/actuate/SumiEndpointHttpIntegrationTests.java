package io.sumi.autoconfigure.actuate;

import static io.sumi.autoconfigure.actuate.ActuatorTestApplication.get;
import static io.sumi.autoconfigure.actuate.ActuatorTestApplication.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.sumi.autoconfigure.actuate.ActuatorTestApplication.Response;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetRegistry;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxTable;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;

/**
 * The {@code sumi} endpoint and health through a real HTTP server on PostgreSQL, exposed and
 * granted write access as an operator's application would: every read, every write, paging, bad
 * requests, who is logged, and the health indicators with the probe groups.
 */
@SpringBootTest(
        classes = ActuatorTestApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "management.endpoints.web.exposure.include=health,sumi",
            "management.endpoint.sumi.access=unrestricted",
            "management.endpoint.health.show-details=always",
            "management.endpoint.health.probes.enabled=true",
            "sumi.budgets.stripe.limit=10",
            "sumi.budgets.stripe.window=1h",
            // An instance budget: its window can be reset from here (a fleet budget's is not, see
            // docs/operations.md).
            "sumi.budgets.stripe.scope=instance",
            "sumi.health.outbox.max-due-age=1h"
        })
@ExtendWith(OutputCaptureExtension.class)
class SumiEndpointHttpIntegrationTests {

    static final Duration LEASE = Duration.ofMinutes(5);

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        ActuatorTestApplication.database(registry);
    }

    @LocalServerPort
    int port;

    @Autowired
    ProcessedMessageStore store;

    @Autowired
    Outbox outbox;

    @Autowired
    OutboxTable outboxTable;

    @Autowired
    BudgetRegistry budgets;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    TransactionTemplate transactions;

    ClaimResult liveClaim;
    final List<Long> parked = new ArrayList<>();

    @BeforeEach
    void seed() {
        jdbc.update("DELETE FROM processed_messages");
        jdbc.update("DELETE FROM outbox");
        Budget stripe = budgets.budget("stripe");
        stripe.forceClosed();
        stripe.resetWindow();
        budgets.update("stripe", io.sumi.budget.BudgetConfig.of(10, Duration.ofHours(1)));

        // mailer: one live claim, one completed, three held for reconciliation; charger: one held.
        liveClaim = store.claim("mailer", new ClaimRequest("live-1", null), LEASE);
        ClaimResult done = store.claim("mailer", new ClaimRequest("done-1", null), LEASE);
        store.complete(done.message());
        for (String id : List.of("held-1", "held-2", "held-3")) {
            hold("mailer", id);
        }
        hold("charger", "held-4");

        // Outbox: two rows of "orders" parked, one of "mail" parked, one of "mail" pending.
        List<Long> ids = transactions.execute(status -> List.of(
                outbox.append("o-1", "orders", "{}"),
                outbox.append("o-2", "orders", "{}"),
                outbox.append("m-1", "mail", "{}"),
                outbox.append("m-2", "mail", "{}")));
        parked.clear();
        parked.addAll(ids.subList(0, 3));
        // As the dispatcher parks a row after its last failed attempt.
        for (long id : parked) {
            jdbc.update(
                    "UPDATE outbox SET parked_at = now(), attempts = 10, last_error = 'broker said no' WHERE id = ?",
                    id);
        }
    }

    private void hold(String consumer, String id) {
        ClaimResult claim = store.claim(consumer, new ClaimRequest(id, null), LEASE);
        store.markForReconciliation(claim.message(), "uncertain outcome of " + id);
    }

    @Test
    void theSummaryShowsTheLedgerPerConsumerTheOutboxPerTopicAndTheBudgets() throws Exception {
        Response response = get(port, "/actuator/sumi");

        assertThat(response.status()).isEqualTo(200);
        JsonNode body = response.json();
        JsonNode mailer = body.at("/ledger/consumers/mailer");
        assertThat(mailer.at("/counts/IN_PROGRESS").asLong()).isEqualTo(1);
        assertThat(mailer.at("/counts/COMPLETED").asLong()).isEqualTo(1);
        assertThat(mailer.at("/counts/RECONCILE").asLong()).isEqualTo(3);
        assertThat(mailer.at("/oldestLiveClaim/messageId").asString()).isEqualTo("live-1");
        assertThat(Instant.parse(mailer.at("/oldestLiveClaim/leaseUntil").asString()))
                .isEqualTo(liveClaim.message().leaseUntil());
        assertThat(body.at("/ledger/consumers/charger/counts/RECONCILE").asLong())
                .isEqualTo(1);
        assertThat(body.at("/ledger/consumers/charger/oldestLiveClaim").isNull())
                .isTrue();
        assertThat(body.at("/outbox/topics/orders/parked").asLong()).isEqualTo(2);
        assertThat(body.at("/outbox/topics/orders/pending").asLong()).isEqualTo(0);
        assertThat(body.at("/outbox/topics/mail/parked").asLong()).isEqualTo(1);
        assertThat(body.at("/outbox/topics/mail/pending").asLong()).isEqualTo(1);
        assertThat(body.at("/outbox/topics/mail/oldestDueAt").asString()).isNotEmpty();
        assertThat(body.at("/budgets/stripe/state").asString()).isEqualTo("CLOSED");
        assertThat(body.at("/budgets/stripe/limit").asDouble()).isEqualTo(10);
        assertThat(body.at("/budgets/stripe/remaining").asDouble()).isEqualTo(10);
    }

    @Test
    void rowsHeldForReconciliationArePagedAndFilteredByConsumer() throws Exception {
        JsonNode first = get(port, "/actuator/sumi/reconciliation?consumer=mailer&size=2")
                .json();
        JsonNode second = get(port, "/actuator/sumi/reconciliation?consumer=mailer&size=2&page=1")
                .json();
        JsonNode all = get(port, "/actuator/sumi/reconciliation").json();

        assertThat(first.at("/totalElements").asLong()).isEqualTo(3);
        assertThat(first.at("/totalPages").asInt()).isEqualTo(2);
        assertThat(first.at("/content")).hasSize(2);
        assertThat(second.at("/content")).hasSize(1);
        List<String> ids = new ArrayList<>();
        first.at("/content").forEach(row -> ids.add(row.at("/messageId").asString()));
        second.at("/content").forEach(row -> ids.add(row.at("/messageId").asString()));
        assertThat(ids).containsExactlyInAnyOrder("held-1", "held-2", "held-3");
        JsonNode row = first.at("/content/0");
        assertThat(row.at("/consumer").asString()).isEqualTo("mailer");
        assertThat(row.at("/status").asString()).isEqualTo("RECONCILE");
        assertThat(row.at("/attempts").asInt()).isEqualTo(1);
        assertThat(row.at("/lastError").asString()).startsWith("uncertain outcome of held-");
        assertThat(row.at("/firstSeenAt").asString()).isNotEmpty();
        assertThat(all.at("/totalElements").asLong()).isEqualTo(4);
        assertThat(get(port, "/actuator/sumi/claims")
                        .json()
                        .at("/content/0/messageId")
                        .asString())
                .isEqualTo("live-1");
    }

    @Test
    void parkedOutboxRowsArePagedAndFilteredByTopic() throws Exception {
        JsonNode first = get(port, "/actuator/sumi/parked?size=2").json();
        JsonNode second = get(port, "/actuator/sumi/parked?size=2&page=1").json();
        JsonNode orders = get(port, "/actuator/sumi/parked?topic=orders").json();

        assertThat(first.at("/totalElements").asLong()).isEqualTo(3);
        assertThat(first.at("/content/0/id").asLong()).isEqualTo(parked.get(0));
        assertThat(first.at("/content/1/id").asLong()).isEqualTo(parked.get(1));
        assertThat(second.at("/content/0/id").asLong()).isEqualTo(parked.get(2));
        assertThat(first.at("/content/0/lastError").asString()).isEqualTo("broker said no");
        assertThat(first.at("/content/0/attempts").asInt()).isEqualTo(10);
        assertThat(orders.at("/totalElements").asLong()).isEqualTo(2);
        orders.at("/content")
                .forEach(row -> assertThat(row.at("/topic").asString()).isEqualTo("orders"));
    }

    @Test
    void aLiveClaimIsReleasedAndTheOperatorIsLogged(CapturedOutput output) throws Exception {
        Response response =
                post(port, "/actuator/sumi/claims/release", "{\"consumer\":\"mailer\",\"messageId\":\"live-1\"}");

        assertThat(response.status()).isEqualTo(200);
        assertThat(response.json().at("/changed").asBoolean()).isTrue();
        // Released: the next delivery takes the message over at once.
        ClaimResult next = store.claim("mailer", new ClaimRequest("live-1", null), LEASE);
        assertThat(next.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(next.message().attempts()).isEqualTo(2);
        assertThat(output)
                .contains("Sumi operator action by anonymous: claims/release {consumer=mailer, messageId=live-1}");

        Response again =
                post(port, "/actuator/sumi/claims/release", "{\"consumer\":\"mailer\",\"messageId\":\"done-1\"}");
        assertThat(again.json().at("/changed").asBoolean()).isFalse();
        assertThat(again.json().at("/reason").asString()).contains("COMPLETED");
    }

    @Test
    void aReconciliationIsResolvedAsDoneOrForARetry() throws Exception {
        assertThat(post(
                                port,
                                "/actuator/sumi/reconciliation/complete",
                                "{\"consumer\":\"mailer\",\"messageId\":\"held-1\"}")
                        .json()
                        .at("/changed")
                        .asBoolean())
                .isTrue();
        assertThat(post(
                                port,
                                "/actuator/sumi/reconciliation/release",
                                "{\"consumer\":\"mailer\",\"messageId\":\"held-2\"}")
                        .json()
                        .at("/changed")
                        .asBoolean())
                .isTrue();
        Response notHeld = post(
                port, "/actuator/sumi/reconciliation/complete", "{\"consumer\":\"mailer\",\"messageId\":\"live-1\"}");

        assertThat(store.find("mailer", "held-1"))
                .get()
                .extracting(ProcessedMessage::status)
                .isEqualTo(MessageStatus.COMPLETED);
        assertThat(store.find("mailer", "held-2")).isEmpty();
        assertThat(notHeld.json().at("/changed").asBoolean()).isFalse();
        assertThat(store.find("mailer", "live-1"))
                .get()
                .extracting(ProcessedMessage::status)
                .isEqualTo(MessageStatus.IN_PROGRESS);
        assertThat(get(port, "/actuator/sumi/reconciliation?consumer=mailer")
                        .json()
                        .at("/totalElements")
                        .asLong())
                .isEqualTo(1);
    }

    @Test
    void parkedRowsAreReDrivenByIdByTopicOrAll() throws Exception {
        assertThat(post(port, "/actuator/sumi/outbox/redrive", "{\"id\":" + parked.get(2) + "}")
                        .json()
                        .at("/rows")
                        .asInt())
                .isEqualTo(1);
        assertThat(outboxTable.find(parked.get(2)).orElseThrow().parked()).isFalse();
        assertThat(outboxTable.find(parked.get(2)).orElseThrow().attempts()).isZero();

        assertThat(post(port, "/actuator/sumi/outbox/redrive", "{\"topic\":\"orders\"}")
                        .json()
                        .at("/rows")
                        .asInt())
                .isEqualTo(2);
        assertThat(outboxTable.stats().parked()).isZero();

        jdbc.update("UPDATE outbox SET parked_at = now() WHERE id = ?", parked.get(0));
        assertThat(post(port, "/actuator/sumi/outbox/redrive", "{\"all\":true}")
                        .json()
                        .at("/rows")
                        .asInt())
                .isEqualTo(1);
        assertThat(post(port, "/actuator/sumi/outbox/redrive", "{\"all\":true}")
                        .json()
                        .at("/changed")
                        .asBoolean())
                .isFalse();
        assertThat(post(port, "/actuator/sumi/outbox/redrive", "{\"id\":1,\"all\":true}")
                        .status())
                .isEqualTo(400);
    }

    @Test
    void aBudgetIsForcedOpenAndClosedResetAndGivenANewLimit() throws Exception {
        Budget stripe = budgets.budget("stripe");

        JsonNode open = post(port, "/actuator/sumi/budgets/force-open", "{\"name\":\"stripe\"}")
                .json();
        assertThat(open.at("/budget/state").asString()).isEqualTo("FORCED_OPEN");
        assertThat(stripe.refresh()).isEqualTo(CircuitBreaker.State.FORCED_OPEN);
        // An open budget is reported, never failed: the budgets' health stays UP.
        JsonNode health = get(port, "/actuator/health/sumiBudgets").json();
        assertThat(health.at("/status").asString()).isEqualTo("UP");
        assertThat(health.at("/details/stripe/state").asString()).isEqualTo("FORCED_OPEN");
        assertThat(health.at("/details/notClosed").asInt()).isEqualTo(1);

        post(port, "/actuator/sumi/budgets/force-closed", "{\"name\":\"stripe\"}");
        assertThat(stripe.refresh()).isEqualTo(CircuitBreaker.State.CLOSED);

        stripe.acquire().onSuccess();
        assertThat(stripe.spent()).isEqualTo(1);
        post(port, "/actuator/sumi/budgets/reset-window", "{\"name\":\"stripe\"}");
        assertThat(stripe.spent()).isZero();

        JsonNode limited = post(port, "/actuator/sumi/budgets/limit", "{\"name\":\"stripe\",\"limit\":25}")
                .json();
        assertThat(limited.at("/budget/limit").asDouble()).isEqualTo(25);
        assertThat(budgets.budget("stripe").config().limit()).isEqualTo(25);

        assertThat(post(port, "/actuator/sumi/budgets/limit", "{\"name\":\"stripe\",\"limit\":-1}")
                        .status())
                .isEqualTo(400);
        assertThat(post(port, "/actuator/sumi/budgets/force-open", "{\"name\":\"nope\"}")
                        .status())
                .isEqualTo(400);
    }

    @Test
    void badRequestsAreRefusedAndChangeNothing() throws Exception {
        assertThat(post(port, "/actuator/sumi/claims/release", "{\"consumer\":\"mailer\"}")
                        .status())
                .isEqualTo(400);
        assertThat(post(port, "/actuator/sumi/claims/explode", "{\"consumer\":\"mailer\",\"messageId\":\"live-1\"}")
                        .status())
                .isEqualTo(400);
        assertThat(get(port, "/actuator/sumi/nothing").status()).isEqualTo(400);
        assertThat(get(port, "/actuator/sumi/parked?size=100000").status()).isEqualTo(400);
        assertThat(store.find("mailer", "live-1")).get().isEqualTo(liveClaim.message());
    }

    @Test
    void healthReportsParkedRowsAndHeldRowsAsDegradedWithoutTouchingTheProbes() throws Exception {
        JsonNode outboxHealth = get(port, "/actuator/health/sumiOutbox").json();
        assertThat(outboxHealth.at("/status").asString()).isEqualTo("DEGRADED");
        assertThat(outboxHealth.at("/details/parked").asLong()).isEqualTo(3);
        assertThat(outboxHealth.at("/details/pending").asLong()).isEqualTo(1);
        JsonNode ledgerHealth = get(port, "/actuator/health/sumiLedger").json();
        assertThat(ledgerHealth.at("/status").asString()).isEqualTo("DEGRADED");
        assertThat(ledgerHealth.at("/details/heldForReconciliation").asLong()).isEqualTo(4);
        assertThat(ledgerHealth.at("/details/heldByConsumer/mailer").asLong()).isEqualTo(3);

        // The aggregate shows it (with 200), and neither probe group includes Sumi's indicators.
        Response all = get(port, "/actuator/health");
        assertThat(all.status()).isEqualTo(200);
        assertThat(all.json().at("/status").asString()).isEqualTo("DEGRADED");
        assertThat(get(port, "/actuator/health/liveness").json().at("/status").asString())
                .isEqualTo("UP");
        assertThat(get(port, "/actuator/health/readiness").json().at("/status").asString())
                .isEqualTo("UP");

        // Resolved: UP again.
        post(port, "/actuator/sumi/outbox/redrive", "{\"all\":true}");
        jdbc.update("DELETE FROM processed_messages WHERE status = 'RECONCILE'");
        assertThat(get(port, "/actuator/health/sumiOutbox").json().at("/status").asString())
                .isEqualTo("UP");
        assertThat(get(port, "/actuator/health/sumiLedger").json().at("/status").asString())
                .isEqualTo("UP");
    }

    @Test
    void anOutboxThatFallsBehindItsMaxDueAgeNeedsAttention() throws Exception {
        post(port, "/actuator/sumi/outbox/redrive", "{\"all\":true}");
        assertThat(get(port, "/actuator/health/sumiOutbox").json().at("/status").asString())
                .isEqualTo("UP");

        // A row due two hours ago and still pending: the dispatcher is not keeping up.
        jdbc.update("UPDATE outbox SET available_at = now() - interval '2 hours' WHERE id = ?", parked.get(0));

        JsonNode late = get(port, "/actuator/health/sumiOutbox").json();
        assertThat(late.at("/status").asString()).isEqualTo("DEGRADED");
        assertThat(Duration.parse(late.at("/details/oldestPendingAge").asString()))
                .isGreaterThan(Duration.ofHours(1));
    }
}
