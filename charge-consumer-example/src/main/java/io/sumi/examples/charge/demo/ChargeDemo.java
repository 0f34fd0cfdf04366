package io.sumi.examples.charge.demo;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetRegistry;
import io.sumi.examples.charge.ChargeConsumerProperties;
import io.sumi.examples.charge.ChargeRequest;
import io.sumi.examples.support.DemoLauncher;
import io.sumi.kafka.BudgetListenerPauser;
import io.sumi.test.CrashInjector;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * The demo: sends charge requests (some twice, as at-least-once delivery does), crashes the
 * consumer between a charge and its completion for some of them, has the provider answer 503 for
 * a while (the error handler's retries then spend budget), and lets the budget of 40 calls per 4
 * seconds open, pause the consumer and resume it. Then it checks that every order was charged
 * exactly once.
 */
public class ChargeDemo implements DemoLauncher.Demo {

    private static final Logger log = LoggerFactory.getLogger(ChargeDemo.class);

    static final int ORDERS = 120;
    static final int DUPLICATE_EVERY = 4;
    static final int CRASH_EVERY = 15;
    static final int OUTAGE_AFTER_CHARGES = 25;
    static final int OUTAGE_REQUESTS = 6;
    static final Duration TIMEOUT = Duration.ofMinutes(3);

    /** The charge listener's id: its ledger namespace. */
    static final String CONSUMER = "charges";

    private final FakePaymentProvider provider;
    private final KafkaTemplate<String, String> template;
    private final CrashInjector crashes;
    private final JdbcTemplate jdbc;
    private final BudgetRegistry budgets;
    private final BudgetListenerPauser pauser;
    private final MeterRegistry meters;
    private final DeadLetters deadLetters;
    private final ChargeConsumerProperties properties;
    private final KafkaListenerEndpointRegistry containers;
    private final DataSource dataSource;

    /** How often the sibling instance makes a paid call under the shared budget. */
    static final Duration SIBLING_PERIOD = Duration.ofMillis(250);

    ChargeDemo(
            FakePaymentProvider provider,
            KafkaTemplate<String, String> template,
            CrashInjector crashes,
            JdbcTemplate jdbc,
            BudgetRegistry budgets,
            BudgetListenerPauser pauser,
            MeterRegistry meters,
            DeadLetters deadLetters,
            ChargeConsumerProperties properties,
            KafkaListenerEndpointRegistry containers,
            DataSource dataSource) {
        this.dataSource = dataSource;
        this.provider = provider;
        this.template = template;
        this.crashes = crashes;
        this.jdbc = jdbc;
        this.budgets = budgets;
        this.pauser = pauser;
        this.meters = meters;
        this.deadLetters = deadLetters;
        this.properties = properties;
        this.containers = containers;
    }

    @Override
    public DemoReport run() throws Exception {
        long start = System.nanoTime();
        for (int i = CRASH_EVERY; i <= ORDERS; i += CRASH_EVERY) {
            crashes.crashNextCompletion(CONSUMER, key(i));
        }
        provider.outageAfter(OUTAGE_AFTER_CHARGES, OUTAGE_REQUESTS);
        BudgetConfig budget = budgets.budget("payments").config();
        log.info(
                "Sending {} charge requests (every {}th twice) to {}; budget 'payments': {} calls per {}",
                ORDERS,
                DUPLICATE_EVERY,
                properties.topic(),
                (long) budget.limit(),
                budget.window());

        // A second instance shares the budget through the database (fleet scope).
        SiblingInstance sibling = new SiblingInstance(dataSource, budgets.budget("payments"), SIBLING_PERIOD);
        int messages = 0;
        int duplicates = 0;
        for (int i = 1; i <= ORDERS; i++) {
            send(i);
            messages++;
            if (i % DUPLICATE_EVERY == 0) {
                send(i);
                messages++;
                duplicates++;
            }
        }
        template.flush();

        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (completedRows() < ORDERS || !idle()) {
            if (System.nanoTime() > deadline) {
                log.error("The demo did not finish within {}", TIMEOUT);
                break;
            }
            Thread.sleep(200);
        }
        sibling.close();
        Double mostInOneWindow = jdbc.queryForObject(
                "SELECT MAX(spent) FROM sumi_budget_spend WHERE budget_name = 'payments'", Double.class);
        return new DemoReport(
                ORDERS,
                messages,
                duplicates,
                crashes.crashes(CONSUMER),
                provider.outages(),
                provider.uniqueKeys(),
                provider.requests(),
                provider.charges(),
                provider.replays(),
                provider.conflicts(),
                (long) count("sumi.messages", "outcome", "duplicate"),
                (long) count("sumi.budget.openings", "reason", "limit_reached"),
                (long) count("sumi.budget.openings", "reason", "circuit_open"),
                pauser.pauses("payments"),
                pauser.resumes("payments"),
                deadLetters.count(),
                completedRows(),
                (System.nanoTime() - start) / 1_000_000,
                (long) budget.limit() + " calls per " + budget.window() + ", breaker opens at "
                        + (int) budget.failureRateThreshold() + "% failures",
                (long) count("sumi.budget.calls", "result", "permitted"),
                sibling.permitted(),
                mostInOneWindow == null ? 0 : mostInOneWindow.longValue(),
                (long) budget.limit());
    }

    private void send(int order) {
        ChargeRequest request = new ChargeRequest(key(order), "cus_" + (order % 17), 500 + 25L * order, "eur");
        ProducerRecord<String, String> record =
                new ProducerRecord<>(properties.topic(), request.order(), request.toForm());
        // The outbox producer writes its row id here; until the outbox lands, the demo plays its part.
        record.headers().add("outbox-id", request.order().getBytes(StandardCharsets.UTF_8));
        // The demo checks what arrived, not each send: a lost send shows as a missing charge.
        CompletableFuture<?> unused = template.send(record);
    }

    private static String key(int order) {
        return String.format("order-%04d", order);
    }

    private int completedRows() {
        Integer rows = jdbc.queryForObject(
                "SELECT COUNT(*) FROM processed_messages WHERE consumer = 'charges' AND status = 'COMPLETED'",
                Integer.class);
        return rows == null ? 0 : rows;
    }

    /** No container is paused and no claim is in progress. */
    private boolean idle() {
        Integer inProgress = jdbc.queryForObject(
                "SELECT COUNT(*) FROM processed_messages WHERE consumer = 'charges' AND status <> 'COMPLETED'",
                Integer.class);
        return (inProgress == null || inProgress == 0)
                && !containers.getListenerContainer("charges").isPauseRequested();
    }

    private double count(String name, String tag, String value) {
        return meters.find(name).tag(tag, value).counters().stream()
                .mapToDouble(Counter::count)
                .sum();
    }
}
