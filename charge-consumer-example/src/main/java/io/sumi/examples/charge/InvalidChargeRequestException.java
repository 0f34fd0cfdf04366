package io.sumi.examples.charge;

/** A charge request that cannot be read: retrying cannot help, it goes to the dead-letter topic at once. */
public class InvalidChargeRequestException extends RuntimeException {

    public InvalidChargeRequestException(String message) {
        super(message);
    }
}
