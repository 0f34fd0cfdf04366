package io.sumi.examples.mail;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Sends one mail per message key, however often the message is delivered.
 *
 * <p>The key is the record's {@code outbox-id} or {@code idempotency-key} header (Sumi's
 * defaults). Sending mail is an effect outside the database, so the handler runs in
 * {@link IdempotencyMode#LEASE lease mode}: Sumi claims the key (one SQL statement), runs the
 * method, and marks the key done. A copy of the message that arrives later is acknowledged without
 * calling the method; a copy that arrives while another thread holds the claim is retried by the
 * error handler until the first one is done. A failure releases the claim, and the error handler
 * retries, then dead-letters. A message without a key is dead-lettered at once.
 */
@Component
@ConditionalOnProperty(name = "mail-consumer.broker", havingValue = "kafka", matchIfMissing = true)
public class MailListener {

    /** The listener id, and so the consumer group and Sumi's ledger namespace. */
    public static final String ID = "mail-sender";

    private static final Logger log = LoggerFactory.getLogger(MailListener.class);

    private final MailGateway mail;

    public MailListener(MailGateway mail) {
        this.mail = mail;
    }

    @KafkaListener(id = ID, topics = "${mail-consumer.topic:mail.send}")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void onMailRequest(String payload) {
        IdempotencyContext context = IdempotencyContext.current();
        MailRequest request = MailRequest.parse(payload);
        if (context.attempt() > 1) {
            log.info(
                    "Sending the mail of key {} again (attempt {}): the previous attempt failed",
                    context.key(),
                    context.attempt());
        }
        // The key goes downstream, so that the mail system can deduplicate too.
        mail.send(request, context.key());
    }
}
