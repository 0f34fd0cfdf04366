package io.sumi.stream.internal;

import com.rabbitmq.client.Channel;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.NotDoneSignal;
import io.sumi.rabbit.internal.SettlingChannel;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.support.AmqpHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/**
 * A Rabbit binder binding with {@code acknowledge-mode: MANUAL} gives the function the delivery's
 * channel and tag in the {@code amqp_channel} and {@code amqp_deliveryTag} headers. The function
 * gets Sumi's settling channel over it in its place (the one {@code @RabbitListener} methods get,
 * {@link SettlingChannel}): its {@code basicAck} / {@code basicNack} / {@code basicReject} of the
 * delivery wait until the completion (or release) is written, and a nack or reject is not success
 * (the claim is released, not completed, and the nack then reaches the broker, which delivers the
 * message again). A duplicate Sumi skips is acknowledged here, by its own tag: the function never
 * saw it, and an unacknowledged delivery would hold the binding's prefetch until the channel
 * closes. After a failure nothing is passed on: the binder's error handling settles the delivery
 * (its republish to the DLQ acknowledges it; a held ack passed on too would settle the tag twice,
 * which closes the channel). Loaded only when Spring AMQP and Sumi's Spring AMQP binder are on the
 * class path.
 */
final class RabbitAcknowledgments implements IdempotentInvoker.Settlement {

    private static final Logger log = LoggerFactory.getLogger(RabbitAcknowledgments.class);

    private final Object input;
    private final SettlingChannel settling;
    private final long tag;

    private RabbitAcknowledgments(Object input, SettlingChannel settling, long tag) {
        this.input = input;
        this.settling = settling;
        this.tag = tag;
    }

    /**
     * The settlement of {@code delivered}, a MANUAL binding's message (it carries the channel and
     * its delivery tag), or {@code null} if it does not; {@code input} is the function's input,
     * which gets the settling channel if it is a message with the delivery's channel.
     */
    static IdempotentInvoker.@Nullable Settlement defer(Message<?> delivered, Object input) {
        if (!(delivered.getHeaders().get(AmqpHeaders.CHANNEL) instanceof Channel channel)
                || !(delivered.getHeaders().get(AmqpHeaders.DELIVERY_TAG) instanceof Long tag)) {
            return null;
        }
        SettlingChannel settling = SettlingChannel.of(channel, Set.of(tag));
        Object callInput =
                input instanceof Message<?> message && message.getHeaders().get(AmqpHeaders.CHANNEL) == channel
                        ? MessageBuilder.fromMessage(message)
                                .setHeader(AmqpHeaders.CHANNEL, settling.channel())
                                .build()
                        : input;
        return new RabbitAcknowledgments(callInput, settling, tag);
    }

    @Override
    public Object input() {
        return input;
    }

    @Override
    public @Nullable Object returned(@Nullable Object value) throws NotDoneSignal {
        if (settling.negative(tag)) {
            throw NotDoneSignal.of(value);
        }
        return value;
    }

    @Override
    public void settled(HandlerResult<?> result) {
        try {
            settling.release();
            if (result.outcome() == MessageOutcome.DUPLICATE && !settling.settled(tag)) {
                settling.target().basicAck(tag, false);
            }
        } catch (Exception ex) {
            // The row is written; the broker delivers the message again once the channel closes,
            // and the row decides then (a duplicate, acknowledged). An exception here would send a
            // settled message to the binder's retry and dead-letter destination.
            log.warn(
                    "Sumi could not pass the settlement of delivery {} on to RabbitMQ; the broker delivers it"
                            + " again when the channel closes",
                    tag,
                    ex);
        }
    }

    @Override
    public void failed(Throwable failure, boolean ran) {
        settling.discard();
    }
}
