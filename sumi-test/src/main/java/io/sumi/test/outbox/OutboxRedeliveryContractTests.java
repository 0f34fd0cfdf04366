package io.sumi.test.outbox;

import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxTable;
import io.sumi.test.SumiTest;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * Contract 2 of the outbox, for an application's own code: <em>a dispatcher that dies after the
 * send but before the mark sends again, and the consumer deduplicates</em>. Extend it in a
 * {@code @SpringBootTest} of the application (with its broker, e.g. {@code @EmbeddedKafka}),
 * implement {@link #appendToOutbox()} with the service method that appends, and name the listener
 * that consumes the topic:
 *
 * <pre>{@code
 * @SpringBootTest
 * @EmbeddedKafka(topics = "mail.send", bootstrapServersProperty = "spring.kafka.bootstrap-servers")
 * class OrderMailRedeliveryTests extends OutboxRedeliveryContractTests {
 *     @Autowired OrderService orders;
 *
 *     @Override
 *     protected void appendToOutbox() {
 *         orders.placeOrder(Order.sample());
 *     }
 *
 *     @Override
 *     protected String consumer() {
 *         return "mail-sender";
 *     }
 * }
 * }</pre>
 *
 * See {@link OutboxContracts#redeliveryIsDeduplicated} for what runs. The application's
 * dispatcher is stopped while it runs and started again after. The listener must consume the
 * rows as the application's publisher sends them; its key is the {@code outbox-id} header
 * ({@link #keyOf(long)} to change that).
 */
public abstract class OutboxRedeliveryContractTests {

    @Autowired
    private OutboxTable outbox;

    @Autowired
    private OutboxPublisher publisher;

    @Autowired
    private ObjectProvider<OutboxDispatcher> dispatcher;

    @Autowired
    private SumiTest sumi;

    /** Calls the application's code that appends to the outbox and commits. */
    protected abstract void appendToOutbox() throws Exception;

    /** The consuming listener: its ledger namespace (the listener id by default). */
    protected abstract String consumer();

    /** The consumer's key of outbox row {@code id}: the row id, as the {@code outbox-id} header carries it. */
    protected String keyOf(long id) {
        return Long.toString(id);
    }

    /** The lease of the dying dispatcher's claim: how long the rows wait before they are sent again. */
    protected Duration lease() {
        return Duration.ofSeconds(2);
    }

    @Test
    void aDispatcherThatDiesAfterTheSendButBeforeTheMarkSendsAgainAndTheConsumerDeduplicates() {
        OutboxContracts.redeliveryIsDeduplicated(
                sumi,
                outbox,
                publisher,
                dispatcher.getIfAvailable(),
                this::appendToOutbox,
                consumer(),
                this::keyOf,
                lease());
    }
}
