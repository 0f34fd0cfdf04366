package io.sumi.conformance.jms;

import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import jakarta.jms.JMSException;
import jakarta.jms.TextMessage;
import org.jspecify.annotations.Nullable;
import org.springframework.jms.annotation.JmsListener;
import org.springframework.transaction.annotation.Transactional;

/** One listener per role; the PLAIN ones without Sumi. */
public class JmsListeners {

    private final Work work;

    public JmsListeners(Work work) {
        this.work = work;
    }

    static @Nullable String keyProperty(TextMessage message) throws JMSException {
        return message.getStringProperty("idempotency_key");
    }

    @JmsListener(id = "jms-lease", destination = "cat.jms.lease", concurrency = "2-2")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void lease(TextMessage message) throws JMSException {
        work.run(message.getText(), IdempotencyContext.current().key(), false);
    }

    @JmsListener(id = "jms-plain", destination = "cat.jms.plain", concurrency = "2-2")
    public void plain(TextMessage message) throws JMSException {
        work.run(message.getText(), keyProperty(message), false);
    }

    @JmsListener(id = "jms-held", destination = "cat.jms.held")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void held(TextMessage message) throws JMSException {
        work.run(message.getText(), IdempotencyContext.current().key(), false);
    }

    @JmsListener(id = "jms-plain-held", destination = "cat.jms.plain-held")
    public void plainHeld(TextMessage message) throws JMSException {
        work.run(message.getText(), keyProperty(message), false);
    }

    @JmsListener(id = "jms-tx", destination = "cat.jms.tx")
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    @Transactional
    public void tx(TextMessage message) throws JMSException {
        work.run(message.getText(), IdempotencyContext.current().key(), true);
    }

    @JmsListener(id = "jms-plain-tx", destination = "cat.jms.plain-tx")
    @Transactional
    public void plainTx(TextMessage message) throws JMSException {
        work.run(message.getText(), keyProperty(message), true);
    }

    /** The ledger-down scenarios' listener: a short lease, a container they stop and start. */
    @JmsListener(id = "jms-ledger-down", destination = "cat.jms.ledger-down")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, lease = "3s")
    public void ledgerDown(TextMessage message) throws JMSException {
        work.run(message.getText(), IdempotencyContext.current().key(), false);
    }

    @JmsListener(id = "jms-stop", destination = "cat.jms.stop")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void stop(TextMessage message) throws JMSException {
        work.run(message.getText(), IdempotencyContext.current().key(), false);
    }

    @JmsListener(id = "jms-budget", destination = "cat.jms.budget")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "jms-budget")
    public void budget(TextMessage message) throws JMSException {
        work.run(message.getText(), IdempotencyContext.current().key(), false);
    }

    /** Artemis's dead-letter address, read back into {@link Work}. */
    @JmsListener(id = "catalogue-dead-letters", destination = "DLQ")
    public void deadLetter(TextMessage message) throws JMSException {
        work.deadLettered(
                message.getText(),
                "JMSXDeliveryCount=" + message.getObjectProperty("JMSXDeliveryCount") + ", sumi_dead_letter_reason="
                        + message.getObjectProperty("sumi_dead_letter_reason"));
    }
}
