"""What a block is and how its bytes are made: ids, the block codec and serializers, sizing
estimates, and the frame authentication every block file carries."""
