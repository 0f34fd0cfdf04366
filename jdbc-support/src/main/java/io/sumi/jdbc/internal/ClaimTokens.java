package io.sumi.jdbc.internal;

import java.security.SecureRandom;

/**
 * The random tokens that fence a claim: a ledger or outbox row carries the token of the claim that
 * holds it, and completing, releasing or marking it succeeds only with that token. Not API.
 *
 * <p>Tokens are 64 random bits from a {@link SecureRandom}, so two claims (of any instance) sharing
 * one is not a practical concern; {@code 0} is never returned, because a row carrying 0 is one no
 * claim wrote (the ledger's placeholder for a row it could not read). Thread-safe; each component
 * holds its own instance, so that claims on different components do not contend for one generator.
 */
public final class ClaimTokens {

    private final SecureRandom random = new SecureRandom();

    /** A new token, never {@code 0}. */
    public long next() {
        long token;
        do {
            token = random.nextLong();
        } while (token == 0L);
        return token;
    }
}
