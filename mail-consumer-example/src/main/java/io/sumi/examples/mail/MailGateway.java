package io.sumi.examples.mail;

/**
 * Sends one mail. The key travels with it so that the receiving side can drop a second copy.
 */
public interface MailGateway {

    /**
     * Sends one mail.
     *
     * @param mail what to send
     * @param idempotencyKey the message's idempotency key (the same on every attempt)
     */
    void send(MailRequest mail, String idempotencyKey);
}
