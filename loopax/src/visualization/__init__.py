"""Drawing masks on images and plotting image galleries (`keras.visualization`)."""
