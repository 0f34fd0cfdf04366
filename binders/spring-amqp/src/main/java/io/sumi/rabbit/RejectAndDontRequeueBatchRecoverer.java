package io.sumi.rabbit;

import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.AmqpRejectAndDontRequeueException;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.retry.MessageBatchRecoverer;
import org.springframework.amqp.rabbit.retry.RejectAndDontRequeueRecoverer;

/**
 * Spring AMQP's {@link RejectAndDontRequeueRecoverer} that can also recover a consumer batch: when
 * a retry interceptor's attempts are spent, a single message or the whole batch is rejected
 * without requeue, so the queue's dead-letter exchange gets every message of it.
 *
 * <p>Why it exists: Spring AMQP's stateless retry interceptor hands a consumer batch only to a
 * {@link MessageBatchRecoverer}; with any other recoverer (Boot's default is
 * {@code RejectAndDontRequeueRecoverer}) it does nothing and returns, and the container then
 * acknowledges the batch, so its messages leave the queue without reaching the dead-letter
 * exchange. The Sumi starter declares this recoverer as the {@code MessageRecoverer} bean when the
 * application declares none (Boot's listener retry then uses it for every factory), and Sumi
 * refuses at start-up a consumer-batch container whose retry recoverer cannot recover a batch
 * (docs/rabbitmq.md, "Boot's listener retry and Sumi").
 *
 * <p>For a single message it behaves exactly as {@code RejectAndDontRequeueRecoverer}. Thread-safe.
 *
 * @since 0.1.0
 */
public class RejectAndDontRequeueBatchRecoverer extends RejectAndDontRequeueRecoverer implements MessageBatchRecoverer {

    private static final String EXHAUSTED = "Retry Policy Exhausted";

    /**
     * Rejects the whole batch without requeue: the exception (a {@code ListenerExecutionFailedException}
     * caused by an {@link AmqpRejectAndDontRequeueException}) makes the container nack every message
     * of the batch without requeue, and keeps its consumer.
     *
     * @throws org.springframework.amqp.AmqpException always, a {@code ListenerExecutionFailedException}
     */
    @Override
    public void recover(List<Message> messages, @Nullable Throwable cause) {
        if (logger.isWarnEnabled()) {
            logger.warn(
                    "Retries exhausted for a consumer batch of " + messages.size()
                            + " message(s): rejected without requeue (to the dead-letter exchange, if the queue has one)",
                    cause);
        }
        throw SpringAmqpLines.listenerExecutionFailed(
                EXHAUSTED, new AmqpRejectAndDontRequeueException(cause), messages.toArray(Message[]::new));
    }
}
